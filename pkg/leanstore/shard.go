package leanstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/reflector"
	"github.com/cachetune/cachetune/pkg/shard"
)

// WithShard makes every informer of the factory keep only the objects that
// the membership's ring assigns to this replica, keyed by namespace and name
// or by namespace alone (by: shard.ByObject or shard.ByNamespace). Package
// shard has the ring and the memberships: shard.NewLeaseMembership,
// shard.Static. Objects of other shards are dropped before they
// are decoded (protobuf) or right after (JSON), on lists and watches alike:
// the cache, the handlers and the work queues only ever see this replica's
// objects, and a replica holds about 1/n of them.
//
// The informers wait for the membership to be ready before they list. When
// the ring changes (a replica joined, left or expired), each informer lists
// again inside its watch and hands client-go only the difference: ADDED for
// the objects that came to this replica, DELETED for those that went to
// another. Until it has, Status reports it rebalancing and Check fails.
// Both events carry the object's own resourceVersion, so that the informer's
// LastSyncResourceVersion goes back while they are handed over, and is at the
// list's again once they have been (docs/sharding.md, "How ownership moves").
//
// Sharding saves memory and decoding, not bandwidth: every replica still
// receives every object of the resource from the API server. A label or field
// selector (WithLabelSelector) is what narrows what the server sends.
//
// m must not be nil, and by must be shard.ByObject or shard.ByNamespace: the
// informers fail otherwise, with the error in Status and Check.
func WithShard(m *shard.Membership, by shard.By) Option {
	return func(o *options) { o.shard = &shardConfig{m: m, by: by} }
}

// shardConfig is WithShard's choice.
type shardConfig struct {
	m  *shard.Membership
	by shard.By
}

func (c *shardConfig) err() error {
	switch {
	case c.m == nil:
		return errors.New("leanstore: WithShard needs a Membership (shard.Static or shard.NewLeaseMembership), got nil")
	case !c.by.Valid():
		return fmt.Errorf("leanstore: WithShard: shard by %q: want %q or %q", c.by, shard.ByObject, shard.ByNamespace)
	}
	return nil
}

// errShardingClientGo is the error of a sharded informer that would be
// client-go's own, which leanstore cannot filter before the store.
var errShardingClientGo = errors.New("WithShard needs leanstore's own list and watch")

// shardFilter is one informer's side of sharding: the ring its handed set reflects
// and what it skipped. A nil *shardFilter owns every object.
type shardFilter struct {
	m   *shard.Membership
	by  shard.By
	bad error // an invalid WithShard

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

func newShardFilter(c *shardConfig) *shardFilter {
	if c == nil {
		return nil
	}
	return &shardFilter{m: c.m, by: c.by, bad: c.err()}
}

// The list/watch loop (internal/reflector) filters and re-lists through the
// filter.
var _ reflector.Shard = (*shardFilter)(nil)

// OwnsBytes reports whether the object with this namespace and name, read
// from encoded bytes, is this replica's under the applied ring. It does not
// allocate: it runs for every object of every list and watch.
func (f *shardFilter) OwnsBytes(ns, name []byte) bool {
	if f == nil {
		return true
	}
	s := f.applied.Load()
	return s != nil && s.OwnsHash(shard.KeyHashBytes(ns, name, f.by))
}

// Owns is OwnsBytes for a decoded object.
func (f *shardFilter) Owns(obj runtime.Object) bool {
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
func (f *shardFilter) Apply(ctx context.Context) error {
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
func (f *shardFilter) Took() {
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
func (f *shardFilter) Changed() <-chan struct{} {
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
func (f *shardFilter) Moved() (bool, []any) {
	latest := f.m.Current()
	if !f.moved(latest) {
		f.advance(latest)
		return false, nil
	}
	return true, []any{"self", f.m.Self(), "members", latest.Members(), "generation", latest.Generation()}
}

// SkippedListed counts an object of another shard dropped from a list.
func (f *shardFilter) SkippedListed() { f.skippedListed.Add(1) }

// SkippedEvent counts an event of another shard dropped from a watch.
func (f *shardFilter) SkippedEvent() { f.skippedEvents.Add(1) }

// moved reports whether ring latest gives this replica other slots than the
// applied one: a ring change that moves nothing to or from this replica
// (another replica's Lease renewed under a new name, say) needs no re-list.
func (f *shardFilter) moved(latest *shard.Version) bool {
	return !f.applied.Load().SameShare(latest)
}

// advance makes latest, a ring that moved nothing (see moved), the applied
// and taken one without a list. It must be the ring moved compared: a newer
// one, published in between, may move slots, and taking it without a list
// would claim objects the informer does not hold; left for later, it closes
// the changed channel of latest and the watch rebalances again.
func (f *shardFilter) advance(latest *shard.Version) {
	f.applied.Store(latest)
	f.taken.Store(latest)
}

// rebalancing reports whether the membership has a ring whose objects the
// informer does not hold yet, and since when.
func (f *shardFilter) rebalancing() (bool, time.Time) {
	if f == nil || f.bad != nil {
		return false, time.Time{}
	}
	t, l := f.taken.Load(), f.m.Current()
	if t == nil || l == nil || t == l {
		return false, time.Time{}
	}
	return true, l.ChangedAt()
}

// status reports the filter's state; nil without sharding.
func (f *shardFilter) status() *ShardStatus {
	if f == nil {
		return nil
	}
	st := &ShardStatus{By: f.by, SkippedListed: f.skippedListed.Load(), SkippedEvents: f.skippedEvents.Load(), Rebalances: f.rebalances.Load()}
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

// census is the census's view of the filter: who this replica is and who
// the others are.
func (f *shardFilter) census() *ShardCensus {
	if f == nil || f.bad != nil {
		return nil
	}
	c := &ShardCensus{By: f.by, Self: f.m.Self()}
	if t := f.taken.Load(); t != nil {
		c.Members = t.Members()
	}
	return c
}

// ShardCensus is the shard side of an informer's Census: the objects it counts
// are this replica's share.
type ShardCensus struct {
	By      shard.By `json:"by"`
	Self    string   `json:"self"`
	Members []string `json:"members"`
}

// shardedClientGo is the error of a sharded informer that leanstore cannot
// list itself.
func shardedClientGo(gr schema.GroupResource, why string) error {
	return fmt.Errorf("leanstore: %s: %w, and this informer is client-go's (%s)", gr, errShardingClientGo, why)
}

// waitingForMembership reports whether c's membership is not ready yet.
func waitingForMembership(c *shardConfig) bool {
	return c != nil && c.m != nil && !c.m.Status().Ready
}

// membershipWhy is the reason a membership is not ready yet, for Check.
func membershipWhy(m *shard.Membership) string {
	if e := m.Status().LastError; e != "" {
		return " (" + e + ")"
	}
	return ""
}

// failingInformer is an informer whose every list and watch fails with err.
func failingInformer(example runtime.Object, err error, resync time.Duration) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nil, err },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return nil, err },
	}
	return cache.NewSharedIndexInformer(lw, example, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}
