// Package resilience measures how an informer lives through API faults. Run
// puts one informer behind a faults.Proxy in front of the real
// kube-apiserver, keeps a writer creating, updating and deleting its objects
// (20 operations per second by default), applies one Scenario for a while,
// lifts it, and reports:
//
// The guide that uses it: docs/errors-and-backoff.md, whose fault table it measures.
//
//   - the informer's requests during the fault, in total and in the worst
//     wall-clock second: a client that backs off stays at a handful, one that
//     spins makes hundreds; how many of them were probes (lists of one
//     object); the time the counts really cover (FaultWindow, longer than the
//     fault on a loaded machine, which is what bounds derived from a backoff
//     must take); and the requests and worst second from the lift to
//     convergence;
//   - whether the store converged, holding exactly the server's objects
//     (keys and resourceVersions, against a fresh consistent list), and how
//     many seconds that took after the fault was lifted (for NoGrant, after
//     the server's authorizer has the grant);
//   - the errors the informer's watch error handler received, by cause
//     (failure.Classify): what a controller could have logged or alerted on.
//
// The informer comes from a constructor, so plain client-go
// (ClientGoConfigMaps) and leanstore's informers (LeanConfigMaps,
// LeanMetadataConfigMaps) are measured the same way:
//
//	restore := resilience.SetWatchList(false) // streaming lists off for this informer
//	r, err := resilience.Run(ctx, srv.Config, ns, resilience.ClientGoConfigMaps,
//		resilience.Scenarios(300, 1200)[0], resilience.Options{FaultFor: 5 * time.Second})
//	restore()
//
//	r, err = resilience.Run(ctx, srv.Config, ns,
//		resilience.LeanConfigMaps(leanstore.WithStreamingLists(leanstore.StreamingOff)),
//		resilience.Scenarios(300, 1200)[0], resilience.Options{FaultFor: 5 * time.Second})
//
// A leanstore informer runs through its factory (FactoryInformer), and the
// result also holds its Status and the factory's readiness check at the end
// of the fault and of the run.
//
// The scenarios are those of issue 9: 410 Gone on every watch, a streaming
// (or paged) list broken part-way by a 410 or a cut connection, a stalled
// watch, a malformed watch frame, 429, 503 and 500 on lists, and 403 on
// watches. Each but the stall first ends the informer's live watch, so that
// the informer meets the fault on its next list or watch. The stall stalls
// the live watch and every watch opened during the fault; the stalled
// connections stay stalled after the fault is lifted, so convergence is
// measured while they still hang. NoGrant is the restricted identity: 403
// on everything until the run grants it list and watch.
//
// MaxAttempts turns a backoff into the bound on requests during a
// persistent fault that the tests check.
package resilience
