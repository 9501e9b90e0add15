// Package shardfilter is one informer's side of sharding (leanstore's
// WithShard): it keeps the objects that a membership's ring (package shard)
// assigns to this replica, applies a new ring when the list/watch loop
// (package reflector, through reflector.Shard) lists with it, and records
// what it skipped and how rebalances went, for the informer's Status, Census
// and metrics.
package shardfilter

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cachetune/cachetune/internal/reflector"
	"github.com/cachetune/cachetune/internal/status"
	"github.com/cachetune/cachetune/pkg/shard"
)

// Filter is one informer's side of sharding: the ring its handed set reflects
// and what it skipped. A nil *Filter owns every object.
type Filter struct {
	m   *shard.Membership
	by  shard.By
	bad error // an invalid Config

	// applied is the ring the informer lists and watches with: the one its handed
	// set (and so client-go's store) reflects, or is being brought to.
	applied atomic.Pointer[shard.Version]
	// taken is the ring whose objects the informer holds: applied once a
	// list with it has been handed to the reflector whole.
	taken atomic.Pointer[shard.Version]

	skippedListed atomic.Int64
	skippedEvents atomic.Int64
	rebalances    atomic.Int64

	mu sync.Mutex
	// moving is when the ring the informer is bringing its handed set to was
	// published; zero when it is not rebalancing.
	moving        time.Time
	lastRebalance time.Time
	lastTook      time.Duration
}

// New returns the filter of c; nil (which owns every object) when c is nil,
// that is without sharding.
func New(c *Config) *Filter {
	if c == nil {
		return nil
	}
	return &Filter{m: c.Membership, by: c.By, bad: c.Err()}
}

// The list/watch loop (internal/reflector) filters and re-lists through the
// filter.
var _ reflector.Shard = (*Filter)(nil)

// OwnsBytes reports whether the object with this namespace and name, read
// from encoded bytes, is this replica's under the applied ring. It does not
// allocate: it runs for every object of every list and watch.
func (f *Filter) OwnsBytes(ns, name []byte) bool {
	if f == nil {
		return true
	}
	s := f.applied.Load()
	return s != nil && s.OwnsHash(shard.KeyHashBytes(ns, name, f.by))
}

// Owns is OwnsBytes for a decoded object.
func (f *Filter) Owns(obj runtime.Object) bool {
	if f == nil {
		return true
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return true // not an object with a key: let the caller's own checks say so
	}
	s := f.applied.Load()
	return s != nil && s.Owns(m.GetNamespace(), m.GetName(), f.by)
}

// Apply waits for the membership's ring and makes its latest version the one
// the informer lists and watches with. Every list calls it first.
func (f *Filter) Apply(ctx context.Context) error {
	if f == nil {
		return nil
	}
	if f.bad != nil {
		return f.bad
	}
	s, err := f.m.Wait(ctx)
	if err != nil {
		return err
	}
	if prev := f.applied.Swap(s); prev != nil && prev != s {
		f.mu.Lock()
		if f.moving.IsZero() {
			f.moving = s.ChangedAt()
		}
		f.mu.Unlock()
	}
	return nil
}

// Took records that the objects of the applied ring have all been handed to
// the reflector.
func (f *Filter) Took() {
	if f == nil {
		return
	}
	s := f.applied.Load()
	if f.taken.Swap(s) == s {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.moving.IsZero() {
		f.rebalances.Add(1)
		f.lastRebalance = time.Now()
		f.lastTook = f.lastRebalance.Sub(f.moving)
		f.moving = time.Time{}
	}
}

// Changed is closed when the membership publishes a ring newer than the
// applied one; nil (never ready) without sharding or before the first list.
func (f *Filter) Changed() <-chan struct{} {
	if f == nil {
		return nil
	}
	if s := f.applied.Load(); s != nil {
		return s.Changed()
	}
	return nil
}

// Moved reports whether the membership's latest ring moves objects to or from
// this replica, and then describes it for the log; a ring that moves nothing
// is applied and taken at once (see advance), and the watch needs no list.
func (f *Filter) Moved() (bool, []any) {
	latest := f.m.Current()
	if !f.moved(latest) {
		f.advance(latest)
		return false, nil
	}
	return true, []any{"self", f.m.Self(), "members", latest.Members(), "generation", latest.Generation()}
}

// SkippedListed counts an object of another shard dropped from a list.
func (f *Filter) SkippedListed() { f.skippedListed.Add(1) }

// SkippedEvent counts an event of another shard dropped from a watch.
func (f *Filter) SkippedEvent() { f.skippedEvents.Add(1) }

// moved reports whether ring latest gives this replica other slots than the
// applied one: a ring change that moves nothing to or from this replica
// (another replica's Lease renewed under a new name, say) needs no re-list.
func (f *Filter) moved(latest *shard.Version) bool {
	return !f.applied.Load().SameShare(latest)
}

// advance makes latest, a ring that moved nothing (see moved), the applied
// and taken one without a list. It must be the ring moved compared: a newer
// one, published in between, may move slots, and taking it without a list
// would claim objects the informer does not hold; left for later, it closes
// the changed channel of latest and the watch rebalances again.
func (f *Filter) advance(latest *shard.Version) {
	f.applied.Store(latest)
	f.taken.Store(latest)
}

// rebalancing reports whether the membership has a ring whose objects the
// informer does not hold yet, and since when.
func (f *Filter) rebalancing() (bool, time.Time) {
	if f == nil || f.bad != nil {
		return false, time.Time{}
	}
	t, l := f.taken.Load(), f.m.Current()
	if t == nil || l == nil || t == l {
		return false, time.Time{}
	}
	return true, l.ChangedAt()
}

// Status reports the filter's state; nil without sharding.
func (f *Filter) Status() *status.Shard {
	if f == nil {
		return nil
	}
	st := &status.Shard{By: f.by, SkippedListed: f.skippedListed.Load(), SkippedEvents: f.skippedEvents.Load(), Rebalances: f.rebalances.Load()}
	if f.bad != nil {
		st.Error = f.bad.Error()
		return st
	}
	st.Self = f.m.Self()
	if t := f.taken.Load(); t != nil {
		st.Members, st.Generation = t.Members(), t.Generation()
	}
	st.Rebalancing, st.RebalancingSince = f.rebalancing()
	f.mu.Lock()
	st.LastRebalance = f.lastRebalance
	st.LastRebalanceSeconds = f.lastTook.Seconds()
	f.mu.Unlock()
	return st
}

// Census is the census's view of the filter: who this replica is and who
// the others are; nil without sharding.
func (f *Filter) Census() *Census {
	if f == nil || f.bad != nil {
		return nil
	}
	c := &Census{By: f.by, Self: f.m.Self()}
	if t := f.taken.Load(); t != nil {
		c.Members = t.Members()
	}
	return c
}

// Census is the shard side of an informer's census: the objects it counts
// are this replica's share.
type Census struct {
	By      shard.By `json:"by"`
	Self    string   `json:"self"`
	Members []string `json:"members"`
}
