// Package doctor examines a live cluster the way docs/troubleshooting.md
// does by hand, resource by resource, and says what a controller's informer
// cache of each would cost and what would fix it. It is the logic of
// `cachebench doctor`; the command only parses flags and prints.
//
// The guide that uses it: docs/troubleshooting.md.
//
//	report, err := doctor.Run(ctx, cfg,
//		doctor.WithResources("pods", "configmaps"), doctor.WithNamespace("shop"),
//		doctor.WithWatch(30*time.Second), doctor.WithProgress(os.Stderr))
//	if err != nil { ... }                 // invalid option, unreachable cluster
//	doctor.WriteTable(os.Stdout, report)  // or WriteMarkdown, WriteJSON
//
// For each resource Run reports:
//
//   - whether the identity may list and watch it (SelfSubjectAccessReview); a
//     resource it may not list is reported as such, and the others are still
//     measured;
//   - the object count, JSON and protobuf bytes in total and per object, the
//     share of managedFields and of kubectl's last-applied annotation, and the
//     largest objects, all measured on the bytes of a paged LIST;
//   - a projected cache heap per mode (client-go typed or dynamic, stripped of
//     managedFields, of last-applied, leanstore with sharing, metadata-only,
//     metadata-only stripped): a random sample is decoded as each informer
//     decodes it (protobuf for built-in kinds), stripped as each mode strips
//     it, and sized with leanstore.EstimateBytesPerObject, the census's sizing;
//   - the time of a paged LIST, first page and whole;
//   - objects stuck Terminating (diagnose.StuckDetector), and with WithWatch,
//     reconcile loops and ping-pong seen by a diagnose.ChurnDetector on a
//     plain watch.
//
// Once per run it tries a streaming list (a watch with sendInitialEvents) on
// the smallest resource it may watch. Recommendations then name the guide's
// symptom (docs/troubleshooting.md), the cause as seen on the cluster, the
// leanstore option or other cachetune API that fixes it, and the projected
// saving.
//
// Run only reads: it writes nothing to the cluster but access reviews.
package doctor
