package reflector

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
)

// Shard is an informer's side of sharding (leanstore's WithShard): which
// objects are this replica's under the ring the informer lists and watches
// with, and what it skipped. Without sharding, Config.Shard is nil and every
// object is kept.
type Shard interface {
	// Owns reports whether a decoded object is this replica's.
	Owns(obj runtime.Object) bool
	// OwnsBytes is Owns for a namespace and name read from encoded bytes; it
	// must not allocate.
	OwnsBytes(namespace, name []byte) bool
	// Apply waits for the membership's ring and makes its latest version the
	// one the informer lists and watches with. Every list calls it first.
	Apply(ctx context.Context) error
	// Took records that the objects of the applied ring have all been handed
	// to the reflector.
	Took()
	// Changed is closed when the membership publishes a ring newer than the
	// applied one; nil before the first list.
	Changed() <-chan struct{}
	// Moved reports whether the membership's latest ring gives this replica
	// other objects than the applied one, and then describes it for the log
	// (key and value pairs); a ring that moves nothing is applied and taken at
	// once, without a list.
	Moved() (moved bool, ring []any)
	// SkippedListed counts an object of another shard dropped from a list,
	// SkippedEvent one dropped from a watch.
	SkippedListed()
	SkippedEvent()
}

// everyShard is the Shard of an informer without sharding: it owns every
// object, and its ring never changes.
type everyShard struct{}

func (everyShard) Owns(runtime.Object) bool    { return true }
func (everyShard) OwnsBytes(_, _ []byte) bool  { return true }
func (everyShard) Apply(context.Context) error { return nil }
func (everyShard) Took()                       {}
func (everyShard) Changed() <-chan struct{}    { return nil }
func (everyShard) Moved() (bool, []any)        { return false, nil }
func (everyShard) SkippedListed()              {}
func (everyShard) SkippedEvent()               {}
