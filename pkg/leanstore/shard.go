package leanstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/shardfilter"
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
	return func(o *options) { o.shard = &shardfilter.Config{Membership: m, By: by} }
}

// ShardCensus is the shard side of an informer's Census: the objects it
// counts are this replica's share.
type ShardCensus = shardfilter.Census

// errShardingClientGo is the error of a sharded informer that would be
// client-go's own, which leanstore cannot filter before the store.
var errShardingClientGo = errors.New("WithShard needs leanstore's own list and watch")

// shardedClientGo is the error of a sharded informer that leanstore cannot
// list itself.
func shardedClientGo(gr schema.GroupResource, why string) error {
	return fmt.Errorf("leanstore: %s: %w, and this informer is client-go's (%s)", gr, errShardingClientGo, why)
}

// failingInformer is an informer whose every list and watch fails with err.
func failingInformer(example runtime.Object, err error, resync time.Duration) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nil, err },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return nil, err },
	}
	return cache.NewSharedIndexInformer(lw, example, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}
