// Package profile turns on profiling for a process that runs informers.
//
// Windowed runtime quantiles, as cachebench uses them:
//
//	before := profile.ReadRuntime()
//	// ... a re-list, a benchmark phase ...
//	w := profile.ReadRuntime().Since(before)
//	fmt.Println(w.SchedLatency.P99, w.GCPauses.Max, w.GCCPUFraction)
package profile
