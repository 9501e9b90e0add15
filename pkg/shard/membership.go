package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// Membership says which members (the replicas of a controller) share the
// work and which of them this process is: the members of a Ring that every
// replica builds alike. There are three kinds:
//
//   - Static(i, n): shard i of n, assigned by the caller (a StatefulSet's
//     ordinal, a flag); the ring never changes.
//   - NewLeaseMembership: each replica holds a Lease and the ring is built
//     from the live Leases, rebuilt when one appears, is released or expires.
//   - NewMembership: the caller sets the members (Set), as it learns them some
//     other way.
//
// One Membership can serve several users in a process (a typed and a
// metadata-only informer factory of one controller): they then split objects
// the same way. A Lease membership runs from the first Start or Run until
// that context ends.
type Membership struct {
	self   string
	kind   string // "static", "leases" or "manual"
	source source
	logger logr.Logger

	cur atomic.Pointer[Version]

	mu      sync.Mutex
	started bool
	done    chan struct{}
}

// source is what keeps a membership's ring current while it runs (the Lease
// side); static and manual memberships have none.
type source interface {
	run(ctx context.Context)
	status(st *MembershipStatus)
}

// newMembership returns a membership of member self that is not ready.
func newMembership(self, kind string, logger logr.Logger) *Membership {
	m := &Membership{self: self, kind: kind, logger: logger, done: make(chan struct{})}
	m.cur.Store(&Version{self: -1, changed: make(chan struct{})})
	return m
}

// Static returns the membership of shard index of total, for replicas whose
// shards are assigned by the caller, such as the ordinals of a StatefulSet.
// Its ring has the members shard-0 to shard-<total-1> and never changes, so no
// Lease is needed; the caller must run exactly one replica per index.
func Static(index, total int) (*Membership, error) {
	if total < 1 || total > MaxMembers {
		return nil, fmt.Errorf("shard: static shards: total must be between 1 and %d, got %d", MaxMembers, total)
	}
	if index < 0 || index >= total {
		return nil, fmt.Errorf("shard: static shards: index must be between 0 and %d, got %d", total-1, index)
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
	m.cur.Store(newVersion(ring, 0, m.self))
	return m, nil
}

func staticMember(i int) string { return "shard-" + strconv.Itoa(i) }

// NewMembership returns a membership of member self whose members the caller
// sets with Set: for a program that learns its replicas another way (a
// headless Service's endpoints, a configuration file). It is ready from the
// first Set. Ring changes are logged to klog's logger.
func NewMembership(self string) (*Membership, error) {
	if self == "" {
		return nil, errors.New("shard: a membership needs the name of its own member")
	}
	return newMembership(self, "manual", klog.Background()), nil
}

// Set makes members (names, in any order; duplicates count once) the ring of
// a membership from NewMembership, publishing a new Version when they differ
// from the current ring's. Self need not be among them: the member then owns
// nothing.
func (m *Membership) Set(members ...string) error {
	if m.kind != "manual" {
		return fmt.Errorf("shard: the members of a %s membership are not set by hand", m.kind)
	}
	for _, name := range members {
		if name == "" {
			return errors.New("shard: a ring member needs a name")
		}
	}
	if len(members) > MaxMembers {
		return fmt.Errorf("shard: a ring of %d members exceeds %d", len(members), MaxMembers)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.publish(slices.Clone(members))
	return nil
}

// Self is this member's name in the ring.
func (m *Membership) Self() string { return m.self }

// Ring returns the current ring, and false until the membership is ready: a
// Lease membership is ready once it holds its own Lease and has listed the
// others'.
func (m *Membership) Ring() (*Ring, bool) {
	v := m.cur.Load()
	if v.ring == nil {
		return nil, false
	}
	return v.ring, true
}

// Current returns the latest version of the ring; its Ring is nil while the
// membership is not ready.
func (m *Membership) Current() *Version { return m.cur.Load() }

// Wait waits until the membership is ready and returns the latest version of
// its ring, or ctx's error.
func (m *Membership) Wait(ctx context.Context) (*Version, error) {
	for {
		v := m.cur.Load()
		if v.ring != nil {
			return v, nil
		}
		select {
		case <-v.changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Status reports the membership's ring and, for a Lease membership, its Lease.
func (m *Membership) Status() MembershipStatus {
	v := m.cur.Load()
	st := MembershipStatus{Kind: m.kind, Self: m.self, Ready: v.ring != nil, Member: v.Member(),
		Members: v.Members(), Generation: v.gen, ChangedAt: v.at}
	if m.source != nil {
		m.source.status(&st)
	}
	return st
}

// Start runs the membership until ctx ends: a Lease membership acquires and
// renews its Lease and watches the others', and when ctx ends deletes its
// Lease, so that the other replicas take its objects at once rather than
// after the Lease expires. Start returns at once; only the first call of
// Start or Run starts anything.
func (m *Membership) Start(ctx context.Context) {
	if run := m.starter(); run != nil {
		go run(ctx)
	}
}

// Run is Start that returns once the membership has stopped (its Lease
// released) after ctx ended; when the membership was started already, by
// Start or another Run, it returns at once. A user that owns the membership
// runs it this way, so that its own shutdown waits for the release.
func (m *Membership) Run(ctx context.Context) {
	if run := m.starter(); run != nil {
		run(ctx)
	}
}

// Done is closed once a started membership has stopped (its Lease released).
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
		if m.source != nil {
			m.source.run(ctx)
		}
	}
}

// publish makes members the ring, if they differ from the current ring's.
// A name may come more than once (two Leases naming one holder): it is one
// member, and compared as one, or every rebuild would publish a new ring.
// Its callers serialize it.
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
	v := newVersion(ring, old.gen, m.self)
	m.cur.Store(v)
	close(old.changed)
	m.logger.Info("shard ring changed", "self", m.self, "member", v.self >= 0, "members", members, "generation", v.gen)
}
