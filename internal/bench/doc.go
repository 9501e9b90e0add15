// Package bench is cachebench's measurement engine: the modes it compares, the
// measurement of one mode in a child process, the protocol between the parent
// and its children, and a run's results as a Report (and its JSON). The
// package report renders a Report as a table and an HTML page.
//
// The guide that uses it: docs/memory.md, whose figures it produces.
//
// # Modes
//
// A Mode is a constructor that starts an informer cache and returns a Cache
// (HasSynced, Len, ListPath, ReconcileList, Stop), plus a name and a few facts. Modes register
// themselves from init functions; RegisterBothListPaths adds a streaming and a
// LIST variant at once:
//
//	func init() {
//		bench.RegisterBothListPaths(bench.Mode{
//			Name:  "mylib/typed",
//			Title: "mylib typed",
//			Start: func(ctx context.Context, env bench.Env) (bench.Cache, error) {
//				// build clients from env.Config, add env.Handler, start
//			},
//		})
//	}
//
// # One process per mode
//
// Heaps of different modes must never share a process, and client-go reads its
// WatchListClient gate once per process. The parent runs each mode with
// RunChild, which starts a child (`cachebench child`) that calls ServeChild;
// they speak JSON lines over the child's stdin and stdout. The child runs
// Measure: time to sync, live heap and bytes per object, heap and RSS peaks
// (Sampler), the lateness of a goroutine sleeping 1 ms (Probe) and the
// runtime's scheduler latency, in the initial sync, an idle window and each
// forced re-list. For a re-list the child asks the parent, which ends the
// child's watch with a 410 Gone through a proxy (the Server interface); the
// re-list is complete when the informer has delivered an update for every
// object it had, or, for a library that delivers only what changed (leanstore),
// when it reports one more completed list. Between the idle window and the
// first re-list, a mode whose Cache has a ReconcileList reads every cached
// object once, as a reconcile listing them does, and Measure records what the
// read allocated and the heap while its objects are held (ReconcileList):
// nothing much for a lister, a copy of every object for controller-runtime's
// client.
//
// # The events phase
//
// With Plan.Events, the measurement goes on after the re-lists with the
// steady state: the child asks the parent for each step (ChildSpec.Write),
// and the parent's writer (dataset.EventWriter, a client of its own, so
// that its CPU is never the child's) creates Pods of its own and changes
// them at the step's rate, stamping every write with its sequence number and
// the wall-clock time it was sent. The child's handler reads the stamp
// (eventRecorder): it times each write from sent to handled, counts the
// writes whose event never came, and, from a quiet window before the first
// step, takes the CPU the process spends at rest off each step's, to give
// the CPU per event. Each step also has its heap growth, peak and GC share.
// Only the rate the writer achieved is reported as the step's rate.
//
// # Modes of other programs
//
// A mode whose library the root module must not require (controller-runtime)
// is registered here with a Program: the parent builds that program from its
// nested module and starts it instead of `cachebench child`. The program
// gives each of its modes a Start with Implement and then calls ServeChild, so
// that it speaks the same protocol and is measured by the same Measure.
//
// # A run
//
// Run is `cachebench run` without its flags: it starts the local server (or
// reaches RunOptions.Cluster, checking access first), seeds the dataset
// (RunOptions.Spec), puts the fault proxy in front of the server (the proxy
// authenticates as the cluster's user, whatever the credentials, and the
// children reach it without any), runs each Job
// (a mode and the resources it caches) in its own child, growing the dataset
// between the sizes of a scale run and leaving out what would not fit in
// memory, and hands the finished Report to RunOptions.Write before it cleans
// up. The command line parses and checks the flags and renders the report.
//
// # Output
//
// A run's results form a Report, written with WriteJSON and read back with
// ReadJSON; the package report renders it (WriteTable, WriteHTML).
package bench
