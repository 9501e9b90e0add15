package leanstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// Membership says which replicas share a controller's caches and which of them
// this process is: the members of the ring that WithShard splits objects by.
// There are two kinds:
//
//   - StaticShards(i, n): shard i of n, assigned by the caller (a StatefulSet's
//     ordinal, a flag); the ring never changes.
//   - NewLeaseMembership: each replica holds a Lease and the ring is built from
//     the live Leases, rebuilt when one appears, is released or expires.
//
// One Membership can serve several factories (a typed and a metadata-only
// factory of one controller): they then split objects the same way. It runs
// from the first Start of a factory that uses it (or its own Start) until that
// context ends.
type Membership struct {
	self   string
	kind   string // "static" or "leases"
	leases *leaseMembership
	logger logr.Logger

	cur atomic.Pointer[ringState]

	mu      sync.Mutex
	started bool
	done    chan struct{}
}

// ringState is one version of the ring. A new version is published by storing
// a new state and closing the old one's changed channel, so that whoever holds
// a state can wait for the next without registering anywhere.
type ringState struct {
	// ring is nil until the membership is ready (its own Lease held, the
	// others listed).
	ring *Ring
	gen  uint64
	// self is this replica's index in ring, -1 when it is not a member (its
	// Lease could not be renewed in time): it then owns nothing.
	self    int
	changed chan struct{}
	at      time.Time
}

func (s *ringState) members() []string {
	if s == nil || s.ring == nil {
		return nil
	}
	return s.ring.Members()
}

// StaticShards returns the membership of shard index of total, for replicas
// whose shards are assigned by the caller, such as the ordinals of a
// StatefulSet. Its ring has the members shard-0 to shard-<total-1> and never
// changes, so no Lease is needed; the caller must run exactly one replica per
// index.
func StaticShards(index, total int) (*Membership, error) {
	if total < 1 || total > maxRingMembers {
		return nil, fmt.Errorf("leanstore: static shards: total must be between 1 and %d, got %d", maxRingMembers, total)
	}
	if index < 0 || index >= total {
		return nil, fmt.Errorf("leanstore: static shards: index must be between 0 and %d, got %d", total-1, index)
	}
	members := make([]string, total)
	for i := range members {
		members[i] = staticMember(i)
	}
	ring, err := NewRing(members...)
	if err != nil {
		return nil, err
	}
	m := &Membership{self: staticMember(index), kind: "static", done: make(chan struct{})}
	m.cur.Store(&ringState{ring: ring, gen: 1, self: ring.index(m.self), changed: make(chan struct{}), at: time.Now()})
	return m, nil
}

func staticMember(i int) string { return "shard-" + strconv.Itoa(i) }

// Self is this replica's name in the ring.
func (m *Membership) Self() string { return m.self }

// Ring returns the current ring, and false until the membership is ready: a
// Lease membership is ready once it holds its own Lease and has listed the
// others'.
func (m *Membership) Ring() (*Ring, bool) {
	s := m.cur.Load()
	if s == nil || s.ring == nil {
		return nil, false
	}
	return s.ring, true
}

// MembershipStatus is the state of a Membership.
type MembershipStatus struct {
	// Kind is "static" or "leases".
	Kind string `json:"kind"`
	Self string `json:"self"`
	// Ready is false until a Lease membership holds its Lease and has listed
	// the others'.
	Ready bool `json:"ready"`
	// Member is false while this replica is not in the ring: its Lease could
	// not be renewed within the renew deadline, and it holds nothing.
	Member bool `json:"member"`
	// Members are the ring's members, sorted.
	Members []string `json:"members"`
	// Generation counts the versions of the ring this process has seen.
	Generation uint64    `json:"generation"`
	ChangedAt  time.Time `json:"changedAt,omitzero"`
	// Lease is namespace/name of this replica's Lease (Lease memberships).
	Lease string `json:"lease,omitempty"`
	// LastRenew is when the Lease was last renewed.
	LastRenew time.Time `json:"lastRenew,omitzero"`
	// LastError is the last failure to renew the Lease or list the others.
	LastError string `json:"lastError,omitempty"`
}

// Status reports the membership's ring and, for a Lease membership, its Lease.
func (m *Membership) Status() MembershipStatus {
	s := m.cur.Load()
	st := MembershipStatus{Kind: m.kind, Self: m.self}
	if s != nil {
		st.Ready = s.ring != nil
		st.Member = s.ring != nil && s.self >= 0
		st.Members = s.members()
		st.Generation = s.gen
		st.ChangedAt = s.at
	}
	if m.leases != nil {
		m.leases.status(&st)
	}
	return st
}

// Start runs the membership until ctx ends: a Lease membership acquires and
// renews its Lease and watches the others', and when ctx ends deletes its
// Lease, so that the other replicas take its objects at once rather than
// after the Lease expires. Start returns at once; only the first call starts
// anything. Factories call it from their own Start; a program that shares one
// Membership between factories may call it first, with its own context.
func (m *Membership) Start(ctx context.Context) {
	if run := m.starter(); run != nil {
		go run(ctx)
	}
}

// Done is closed once a started membership has stopped (its Lease deleted).
func (m *Membership) Done() <-chan struct{} { return m.done }

// starter returns the function that runs the membership, or nil when it has
// been started already.
func (m *Membership) starter() func(context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return nil
	}
	m.started = true
	return func(ctx context.Context) {
		defer close(m.done)
		if m.leases != nil {
			m.leases.run(ctx)
		}
	}
}

// ready waits until the membership has a ring, and returns it.
func (m *Membership) ready(ctx context.Context) (*ringState, error) {
	for {
		s := m.cur.Load()
		if s.ring != nil {
			return s, nil
		}
		select {
		case <-s.changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// publish makes members the ring, if they differ from the current ring's.
// A name may come more than once (two Leases naming one holder): it is one
// member, and compared as one, or every rebuild would publish a new ring.
func (m *Membership) publish(members []string) {
	old := m.cur.Load()
	slices.Sort(members)
	members = slices.Compact(members)
	if old.ring != nil && slices.Equal(old.ring.members, members) {
		return
	}
	ring, err := NewRing(members...)
	if err != nil { // names come from Leases the API server validated
		m.logger.Error(err, "shard ring not rebuilt")
		return
	}
	s := &ringState{ring: ring, gen: old.gen + 1, self: ring.index(m.self), changed: make(chan struct{}), at: time.Now()}
	m.cur.Store(s)
	close(old.changed)
	m.logger.Info("shard ring changed", "self", m.self, "member", s.self >= 0, "members", members, "generation", s.gen)
}
