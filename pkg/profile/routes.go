package profile

import (
	"net/http"

	pyroscopepprof "github.com/grafana/pyroscope-go/http/pprof"
)

// routes builds the endpoints' mux; /metrics only when metrics is not nil. net/http/pprof is deliberately not
// imported: its init registers on http.DefaultServeMux, which would expose
// profiles on any server a program starts with a nil handler.
func routes(o options, metrics http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", servePprofIndex)
	mux.HandleFunc("/debug/pprof/cmdline", serveCmdline)
	// Pyroscope's handler rather than runtime/pprof: when a Pyroscope profiler
	// owns the CPU profiler, it hands the profiler to this request and takes
	// it back afterwards (the plain handler would fail with "CPU profiling
	// already in use"); without one it is the plain handler.
	mux.HandleFunc("/debug/pprof/profile", pyroscopepprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", serveSymbol)
	mux.HandleFunc("/debug/pprof/trace", serveTrace)
	mux.HandleFunc("/debug/pprof/delta_heap", serveDeltaHeap)
	mux.HandleFunc("/debug/fgprof", serveWallclock)
	if metrics != nil {
		mux.Handle("/metrics", metrics)
	}
	mux.HandleFunc("/healthz", serveHealthz)
	mux.Handle("/readyz", readyzHandler(o.readiness, o.readinessTimeout))
	return mux
}
