// Package bench is cachebench's measurement engine: the modes it compares, the
// measurements a child process takes of one mode, the protocol between the
// parent and its children, and the rendering of results as a table, JSON and a
// self-contained HTML report.
//
// One mode runs in one child process so that heaps never mix. The parent starts
// the child, answers its requests for forced re-lists (it ends the child's watch
// with a 410 Gone through a fault proxy) and collects one Result per mode:
//
//	res, err := bench.RunChild(ctx, bench.ChildSpec{
//		Command: exec.Command(os.Args[0], "child"),
//		Mode:    mode,
//		Config:  proxyConfig,
//		Plan:    bench.DefaultPlan(),
//	}, server)
//
// A child runs Measure with the same Mode, reading its instructions from stdin
// and writing JSON lines to stdout (see ServeChild).
//
// Modes are registered with Register; a mode is a constructor that starts an
// informer cache and returns a Cache (HasSynced, Len, ListPath, Stop).
package bench
