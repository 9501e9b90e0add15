// Package diagnose finds, from an informer's events and store, the causes of
// controller trouble that show in the objects themselves: reconcile loops,
// two controllers fighting over a field, and objects stuck Terminating.
//
// The guide that uses it: docs/troubleshooting.md.
//
// # Churn: loops and ping-pong
//
// A ChurnDetector classifies every update an informer delivers (ClassSpec,
// ClassStatus, ClassMetadata, ClassStatusAndMetadata, ClassResourceVersion, or
// ClassUnknownBody for metadata-only informers, which cannot see the status),
// keeps each object's recent updates in a sliding window, and reads
// managedFields to learn which managers wrote and who took fields from whom:
//
//	d, err := diagnose.NewChurnDetector(diagnose.WithResource("widgets"),
//		diagnose.WithMetrics(prometheus.DefaultRegisterer))
//	if err != nil {
//		return err
//	}
//	informer.AddEventHandler(d.Handler())
//	...
//	for _, f := range d.Findings() {
//		log.Printf("%s on %s: %d updates in %s by %v", f.Kind, f.Object, f.Updates, f.Window, f.Managers)
//	}
//
// A FindingLoop is an object rewritten at least WithLoopThreshold times within
// WithWindow, for at least half the window, without a spec change and with new
// content almost every time: a controller writing a timestamp or another
// non-deterministic value on every reconcile. The fix is to write only
// deterministic values, skip writes that change nothing, and filter status-only
// updates (predicate.GenerationChanged).
//
// A FindingPingPong is ownership of the same fields moving between two
// managers, back and forth, WithPingPongTurns times in a row: two controllers
// fighting over one field. It names both managers. The fix is to give each
// field one owner (server-side apply without force shows the conflict).
//
// The detector needs managedFields to name managers and to see ping-pong:
// register it on an informer whose objects still carry them, or on a separate
// metadata-only informer. Its memory is bounded whatever the cache's size: see
// ChurnDetector.
//
// # Stuck Terminating
//
// A StuckDetector reports objects whose deletionTimestamp is older than
// WithThreshold, with the finalizers they wait for, from an informer's store
// (ScanStore, or Run periodically) or from a one-shot metadata-only List:
//
//	s, err := diagnose.NewStuckDetector(diagnose.WithThreshold(10 * time.Minute))
//	if err != nil {
//		return err
//	}
//	stuck, err := s.List(ctx, metadataClient, gvr, "")
//	for _, st := range stuck {
//		fmt.Printf("%s Terminating for %s, waiting for %v\n", st.Object, st.Age, st.Finalizers)
//	}
//
// # Options and metrics
//
// Each detector takes its own options (ChurnOption, StuckOption); those that
// apply to both are an Option. An option out of range is an error from the
// constructor, never adjusted. WithMetrics registers the detector's series,
// all labelled resource: the churn detector's
// cachetune_diagnose_churn_updates_total{class}, cachetune_diagnose_churn_tracked_objects,
// cachetune_diagnose_churn_evicted_objects_total, cachetune_diagnose_churn_findings{kind} and,
// per finding (at most WithMaxFindings series),
// cachetune_diagnose_churn_finding_updates{kind,namespace,name,managers}; the stuck
// detector's cachetune_diagnose_stuck_terminating_objects and, for the oldest objects
// up to WithMaxFindings,
// cachetune_diagnose_stuck_terminating_age_seconds{namespace,name,finalizers}.
package diagnose
