// Package leancache makes every informer of a controller-runtime cache a
// leanstore informer: the operator's own CRD Go types (decoded from JSON),
// built-in types (read with leanstore's lean protobuf decoder), unstructured
// objects and metadata-only watches (builder.OnlyMetadata), each with
// leanstore's stripping (managedFields by default, last-applied and more on
// request), streaming-list control, re-lists into the existing store and
// failure reporting. controller-runtime's own answer to memory is
// TransformStripManagedFields alone.
//
// The guide that uses it: README.md, "controller-runtime operators, and envtest with nothing to download".
//
// A manager takes it in one line, and the rest of the operator does not
// change:
//
//	lean := leancache.New(leancache.Options{
//		Leanstore: []leanstore.Option{leanstore.WithStripLastApplied()},
//	})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
//		Scheme:   scheme,
//		NewCache: lean.NewCache,
//		Cache:    cache.Options{ /* controller-runtime's own, unchanged */ },
//	})
//	_ = mgr.AddReadyzCheck("informers", lean.Checker())
//
// leanstore.WithEncodedStore among the Leanstore options keeps every
// informer's objects encoded and compressed (built-in types as protobuf, CRD
// Go types and unstructured objects as JSON), decoded on each read: every
// object the cache hands out is then a fresh one, so
// cache.Options.UnsafeDisableDeepCopy is safe with it and saves the client's
// second copy. docs/memory.md, "Choosing the encoded store, sharing or the
// defaults", gives its costs.
//
// lean.Status and lean.Census report on every informer; leanstore's
// Prometheus metrics go to controller-runtime's metrics.Registry (served on
// the manager's metrics endpoint) while each informer runs.
//
// # What keeps its meaning
//
// controller-runtime's cache itself is unchanged: its readers, indexes
// (IndexField), per-namespace and per-object caches, and the deep copy its
// client makes of every object it reads (unless UnsafeDisableDeepCopy) are
// its own. Only the informers underneath are leanstore's, each scoped exactly
// as controller-runtime would scope its own: DefaultNamespaces and per-object
// Namespaces, label and field selectors, SyncPeriod, watch error handlers, and
// transforms (DefaultTransform, ByObject.Transform), which run after
// leanstore's stripping.
//
// # How the scope is learnt
//
// controller-runtime's NewInformer hook receives only a ListerWatcher, with
// the namespace and selectors inside closures. NewCache therefore wraps the
// cache's HTTP client (sharing its transport): each new informer's
// ListerWatcher is called once to list and once to watch with a context that
// marks the calls as probes, the wrapper answers those itself with an empty
// list and an empty watch, and their URLs are read back into a namespace and
// selectors. Nothing is guessed: a URL that is not of the informer's resource,
// or that asks for anything leanstore cannot honour, makes the informer's
// creation fail with that error. Options that cannot be honoured at all
// (a NewInformer of the caller's, EnableWatchBookmarks=false) fail NewCache.
package leancache
