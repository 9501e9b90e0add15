// Package informer is client-go's SharedIndexInformer over a store that is
// not client-go's.
//
// client-go builds its informer's store itself (cache.NewIndexer) and gives
// no way to supply another, so a store that keeps objects differently (encoded
// and compressed, see package encstore) cannot serve client-go's informer.
// This package is client-go v0.37.2's sharedIndexInformer, processor and
// processorListener, taken over with their behaviour and names, around a
// store that a StoreFactory builds:
//
//	inf, err := informer.NewWithStore(lw, &corev1.Pod{}, informer.Options{
//		SharedIndexInformerOptions: cache.SharedIndexInformerOptions{ResyncPeriod: resync},
//		NewStore: encstore.NewIndexer(encstore.Options{Codec: encstore.Protobuf(newPod)}),
//	})
//
// What it reuses from client-go, unchanged: the controller and its reflector
// (cache.New, cache.Config), the FIFO (cache.NewRealFIFOWithOptions, or the
// DeltaFIFO when InOrderInformers is off, as client-go chooses), the
// mutation detector, synctrack's per-handler sync tracking and the growing
// ring buffer of each handler. What it carries over as source, because
// client-go does not export it: the informer itself, the processor that gives
// each handler its own goroutines and unbounded buffer, processDeltas and its
// batch and re-list variants, and the handler names. Handlers, resync periods
// per handler, late handlers receiving the store's objects as ADDs,
// RemoveEventHandler and cache.ShutDownEventHandler, SetTransform,
// SetWatchErrorHandler(WithContext), AddIndexers (allowed until the informer
// stops, as in v0.37.2), HasSynced and HasSyncedChecker of the informer and of
// each registration, LastSyncResourceVersion, IsStopped and the InOrderInformers
// batch path all behave as client-go's: client-go's own tests of them run
// against this package (upstream_shared_informer_test.go,
// upstream_controller_test.go) over an encoded store, and over client-go's
// store with -informer.store=client-go.
//
// # What changes with a store whose reads decode
//
// When the store has an Upsert method (encstore.Store does), the informer
// updates it with Upsert instead of Get then Update: the store reports the
// object it replaced and decodes it only when a handler is to receive it.
// An update that keeps an object's resourceVersion (a resync, or an object
// unchanged in a re-list) goes only to handlers due for a resync, as in
// client-go; when none is, its old object is never decoded, and the store
// keeps the bytes it has without encoding the new object. A re-list
// (client-go's ReplacedAll) is applied to such a store in place, one object at
// a time, with the events client-go gives and in its order, rather than by
// Replace, which in client-go holds every replaced object until the whole
// list is stored. The one difference a handler can see: while a re-list's
// events are delivered, the store holds the listed objects before the one
// being delivered and not yet those after it, as client-go's store does when
// its AtomicFIFO feature is off.
//
// When the store packs (encstore.Store.Pack), a list may hand the informer
// packed objects: the queue holds them at the size the store keeps them, and
// the informer decodes each when it applies it, for its handlers and its
// transform (which the queue does not run on them), and stores the packed
// bytes. A packed object whose version the store holds, that no handler is
// due to receive, is not decoded at all. A tombstone the queue makes of a
// packed object reaches handlers with the object decoded.
//
// One more difference, for tests: client-go lets its own tests put a fake
// clock into the informer's controller; cache.New does not, so here the fake
// clock drives resync decisions but the reflector's backoff runs on real time.
package informer
