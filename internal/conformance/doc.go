// Package conformance is a differential test harness for leanstore: it runs the
// same seeded program of server writes and faults against plain client-go
// informers (the oracle) and against leanstore's informers of every factory and
// mode, all at once on one real API server behind one fault proxy, and checks
// each of them against the truth, a fresh consistent LIST:
//
// The guide that uses it: README.md, "Layout" (and `make conformance`).
//
//   - after every step, the store holds the same keys at the same
//     resourceVersions as the truth;
//   - the state the event handlers were told (adds, updates and deletes
//     applied in order) equals the store, so every object the server deleted
//     reached the delete handler, as the object or as a tombstone;
//   - no handler saw a resourceVersion older than one it had already seen for
//     the same key;
//   - the informer's LastSyncResourceVersion never went backwards;
//   - no goroutine is left once the informers stop.
//
// A program is a list of steps; each step writes to the server (create,
// update, patch, status update, delete, delete with a finalizer, moving objects
// out of and into the informers' label selector, namespace churn) while one
// fault is active (410 on watches, 410 in the middle of a streaming list, cut,
// truncated and malformed streams and bodies, stalls, 429 and 5xx, JSON where
// protobuf was asked, a streaming list without its initial-events-end
// bookmark), then lifts the fault and waits for every informer to converge.
// Some informers have a slow index function, so that events are still queued
// in client-go's FIFO when a re-list compares its list with what the informer
// was told.
//
// Run(ctx, cfg, seed) runs one program; a failing seed is replayed with the
// same seed. The package's tests run a fixed set of seeds in `make test` and any
// number in `make conformance`.
//
// RunShards(ctx, cfg, seed) applies the same checks to sharded informers
// (leanstore.WithShard): replica processes coordinated by Leases split the
// Pods while the writer writes, one is killed with SIGKILL and another joins,
// and the union of their stores is checked against a fresh consistent LIST,
// with each replica's handlers checked as above and every object that moved
// checked not to reach its new owner older than its old owner had it. The
// replicas are the test binary itself, run again with ShardReplicaEnv set.
package conformance
