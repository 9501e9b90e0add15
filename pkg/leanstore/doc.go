// Package leanstore provides drop-in replacements for client-go's informer
// factories whose caches are lean: smaller per object, with no start-up or
// re-list spike, and with every list and watch failure reported.
//
// The guide that uses it: docs/memory.md.
//
// A controller swaps one constructor and keeps every lister, informer and handler:
//
//	// factory := informers.NewSharedInformerFactory(clientset, 0)
//	factory := leanstore.NewSharedInformerFactory(clientset, 0,
//		leanstore.WithStripLastApplied(), // on top of managedFields, stripped by default
//		leanstore.WithSharing(true),      // opt-in: Pods of one workload share their equal parts
//	)
//	pods := factory.Core().V1().Pods().Lister()
//	factory.Start(ctx.Done())
//	factory.WaitForCacheSync(ctx.Done())
//
// NewDynamicSharedInformerFactory and NewMetadataSharedInformerFactory replace
// dynamicinformer.NewDynamicSharedInformerFactory and
// metadatainformer.NewSharedInformerFactory the same way. Each returns a type
// that implements client-go's factory interface (checked at compile time) and
// adds Status, Census and Check.
//
// # What is lean about it
//
// Each informer is client-go's own SharedIndexInformer; only its list and watch
// are leanstore's:
//
//   - Stripping: managedFields (by default), annotations by key or prefix
//     (WithStripLastApplied, WithStripAnnotations), and prunes per resource or Go
//     type (WithPrune, WithTypedPrune), in that fixed order, then the caller's own
//     transform (WithTransform or SetTransform). Each runs once per decoded
//     object, and all are idempotent.
//   - No untransformed list: for protobuf (typed and metadata-only informers) a
//     list page or watch event is read field by field; managedFields and stripped
//     annotations are cut from the encoded bytes before an object is decoded, and
//     a page is never held whole.
//   - Re-lists into the existing store: an object whose uid and resourceVersion
//     match the cached one is not decoded at all; the cached object is kept. A
//     re-list of an unchanged cache allocates almost nothing.
//   - Re-lists inside the watch: when a watch expires (410 Gone), the informer
//     lists again without ending the watch and hands client-go only what changed:
//     ADDED and MODIFIED for objects that differ from the store, DELETED (with the
//     last known object, not a tombstone) for those the list no longer has, and a
//     bookmark at the list's resourceVersion. client-go's store is not replaced
//     wholesale, which would build a second items map, index and key set (its
//     cost per object is measured in docs/memory.md, "Two stores during a
//     re-list") and send every handler an update per object. Other
//     failures that need a list (a stalled watch twice in a row, an expired
//     resourceVersion when a watch starts) go through client-go's re-list.
//   - A heap bound during lists (WithHeapBound, default 1.25): the list collects
//     garbage itself when the heap passes the bound, instead of letting it reach
//     twice the live heap, and goes on watching the heap while the informer
//     takes in its first list, at most 256 times a list, and only in a process that
//     has not chosen its own GC policy (GOGC, GOMEMLIMIT, debug.SetGCPercent or
//     debug.SetMemoryLimit): leanstore reads those settings and never writes
//     them. Status.ForcedGCs counts the collections it ran.
//   - Interning (WithInterning, on by default): each informer keeps one copy of
//     each repeated string; strings are immutable, so this is always safe.
//   - Sharing (WithSharing, opt-in): equal slices, maps and pointers of an
//     informer's objects are stored once. See below for what it saves and risks.
//   - An encoded store (WithEncodedStore, opt-in): each object is kept as its
//     stripped encoded bytes, compressed, and decoded on every read, which
//     returns an object the caller owns. Smaller than sharing without its
//     risk; every read costs a decode (docs/memory.md, "Choosing the encoded
//     store, sharing or the defaults").
//
// # Interning and sharing
//
// Interning makes a stripped typed Pod of the standard dataset about a sixth
// smaller, sharing about four times smaller again; docs/memory.md gives the
// figures per mode, each with the committed result file it comes from.
//
// Both are safe beside listers reading on other goroutines, and under client-go's
// WatchList, which transforms each listed object twice: a value other objects
// hold is never written. Each informer has its own table of canonical values,
// so objects of two informers, two resource types or two factories never share
// a part. Within an informer, though, a shared part is one value held by many
// objects: code that changes a cached object in place, which client-go forbids
// but which happens, changes all of them. That is why sharing is opt-in, and
// why WithMutationGuard (or CACHETUNE_MUTATION_DETECTOR=true) exists: it
// reports any shared value that changed in place, with the object and the field
// path, from Informer.CheckMutations, a log line, Status.Mutations and a
// counter, and never panics.
//
// # Streaming lists
//
// WithStreamingLists: Auto uses them when the server serves them and
// remembers a refusal; On always tries; Off always pages.
//
// # Failures are never silent
//
// Every failure of a list or watch (including the 410s, broken streams and
// stalled watches that client-go only logs at high verbosity, or not at all) is
// logged with its class, counted in Prometheus (WithMetrics), recorded in the
// informer's Status, and given to every handler registered with
// SetWatchErrorHandler as a *failure.Error. Failed lists and watch starts are
// retried with the factory's Backoff (WithBackoff; client-go's defaults, plus a
// reset after each success). A watch that delivers nothing for
// WithWatchIdleTimeout (2 minutes by default; the server sends a bookmark about
// once a minute) is ended and resumed from its last resourceVersion.
//
// # Sharding over replicas
//
// WithShard splits the objects of every informer of a factory between the
// replicas of a controller, on a consistent-hash ring of the members of a
// shard.Membership (package shard, usable without leanstore): shard.Static(i,
// n), or shard.NewLeaseMembership, whose ring is built from the replicas' live
// Leases. Objects of other shards are dropped before
// they are decoded; when the ring changes, each informer lists again inside its
// watch and hands client-go only ADDED for what came and DELETED for what went.
// It divides memory, not traffic: every replica still receives every object.
// See docs/sharding.md.
//
// # Looking inside
//
// Status reports per informer the list path the server really served and why,
// the last list, the objects kept on the last re-list and the failures by cause.
// Census counts objects and estimates the heap they hold (docs/memory.md says
// how close the estimate comes to the measured heap, and which benchmark
// measures it); with WithMetrics both are Prometheus gauges. Check is a
// readiness check that names informers not synced or degraded. Unwrap finds the
// leanstore Informer behind client-go's typed informer views.
package leanstore
