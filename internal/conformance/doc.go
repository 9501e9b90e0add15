// Package conformance is a differential test harness for leanstore: it runs the
// same seeded program of server writes and faults against plain client-go
// informers (the oracles: typed, dynamicinformer's and metadatainformer's)
// and against leanstore's informers of every factory and mode, all at once on
// one real API server behind one fault proxy, and checks each of them against
// the truth and against each other.
//
// The guide that uses it: README.md, "Layout" (and `make conformance`).
//
// The truth is a fresh consistent LIST after every step, taken in each kind's
// form (the typed LIST, then the dynamic and metadata-only LISTs at its
// resourceVersion exactly), and the server's history: a watch of every Pod of
// the run per kind, straight from the server, never faulted, from which the
// events a watch on the informers' selector delivers are derived. The checks:
//
//   - content: after every step, every object each informer holds, in its
//     store and as its handlers were last told it, equals the truth's object
//     with the flavor's stripping applied (managedFields and the last-applied
//     annotation for leanstore, nothing for client-go), by apimachinery's
//     semantic equality, with a cmp.Diff when it does not; only the TypeMeta
//     of typed and metadata-only objects is not compared (see normalized).
//     The writer makes Pods share parts (labels, image, environment,
//     resources) and diverge again, for WithSharing. The encoded flavors
//     (WithEncodedStore) hold the same objects as bytes and decode them on
//     every read, so their content check also checks the codec, and reads
//     each object by key as well, which fills the hot cache that later reads
//     use (one encoded flavor hands out its hot objects, SharedReads);
//   - keys: the store holds the truth's keys at the truth's
//     resourceVersions, and the handlers were told the same;
//   - old objects: every update's old object equals the last object the
//     handler was told for the key, and every delete's object (or
//     tombstone's) equals it too, but for a delete's newer resourceVersion;
//     an add comes only for a key the handler does not hold, an update and a
//     delete only for one it holds; resourceVersions go forwards per key (see
//     recorder);
//   - event streams: every add and update is of a version the server had in
//     the selector, with the server's object at that resourceVersion; no
//     delete is of an object the server still had at that resourceVersion;
//     in a step in which an informer did not list, it was told exactly the
//     history's events of the versions written in the step, in order; and
//     leanstore's events and objects equal client-go's of the same kind (see
//     streams.go for what a list may coalesce, and why the rest may not);
//   - the initial list's flag: the adds a handler is told as of the initial
//     list (isInInitialList) come before any other event, and leanstore's
//     are client-go's of the same kind, key by key and resourceVersion by
//     resourceVersion;
//   - faults that act: each step reads the proxy's counters of its fault
//     (faults.Counter); a fault that no request met yet holds, the writer
//     writing on, until one does or for up to 65 s (a client-go informer
//     backing off may make the only request it can act on), and a step
//     whose fault met no request or stream runs again, up to
//     Config.Attempts times, then fails; Result.Acted counts the steps that
//     acted;
//   - time to truth: after each step every leanstore informer holds the
//     truth within its bound (Bounds: within client-go's time of the same
//     kind plus Slack where client-go converges, and within Quick, or Slow
//     for a fault detected by a time-out, below the idle time-out and twice
//     it), measured from the lift of the fault; and, counted by the proxy
//     per informer (each has its own User-Agent), a leanstore informer that
//     lists in a step whose fault forces no list fails: only a missed event
//     would need that list;
//   - the informer's LastSyncResourceVersion never went backwards, and
//     leanstore's handlers are told every event after the initial list in
//     resourceVersion order across keys, its re-lists inside the watch
//     included (a dip of LastSyncResourceVersion can last microseconds,
//     between samples; the handler sees every event);
//   - no goroutine is left once the informers stop.
//
// A program is a list of steps; each step writes to the server (create,
// update, patch, status update, delete, delete with a finalizer, moving objects
// out of and into the informers' label selector, namespace churn, sharing
// and diverging parts) while one fault is active (410 on watches, 410 in the
// middle of a streaming list, cut, truncated and malformed streams and bodies,
// stalls, 429 and 5xx, JSON where protobuf was asked, a streaming list
// without its initial-events-end bookmark), then lifts the fault and waits
// for every informer to converge. Some informers have a slow index function,
// so that events are still queued in client-go's FIFO when a re-list
// compares its list with what the informer was told.
//
// The faults of a program are a pure function of its seed (PlanFaults): the
// fixed seeds of `make test` draw every fault, which a test that needs no
// server checks. Run(ctx, cfg, seed) runs one program; a failing seed is
// replayed with the same seed, and CACHETUNE_CONFORMANCE_FAULTS narrows a run
// to some faults.
//
// RunShards(ctx, cfg, seed) applies the key checks to sharded informers
// (leanstore.WithShard): replica processes coordinated by Leases split the
// Pods while the writer writes, one is killed with SIGKILL and another joins,
// and the union of their stores is checked against a fresh consistent LIST,
// with each replica's handlers checked for keys and resourceVersions, and
// every object that moved checked not to reach its new owner older than its
// old owner had it, and each replica's lists counted: one to start and one
// per rebalance, so that no full list repairs a store unseen. The replicas are the test binary itself, run again with
// ShardReplicaEnv set.
package conformance
