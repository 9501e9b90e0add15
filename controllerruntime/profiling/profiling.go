// Package profiling mounts cachetune's profiling endpoints (pkg/profile's
// Handler: the /debug/pprof/ profiles, heap growth at
// /debug/pprof/delta_heap, fgprof's wall-clock profile at /debug/fgprof)
// on a controller-runtime manager's metrics server, so that an operator
// needs no listener of its own for them. The metrics server's FilterProvider
// (kubebuilder's scaffold sets filters.WithAuthenticationAndAuthorization)
// guards them as it guards /metrics: profiles expose memory contents.
//
// The guide that uses it: README.md, "Use it from your project".
//
//	h, err := profile.NewHandler()
//	if err != nil {
//		return err
//	}
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
//		Metrics: metricsserver.Options{BindAddress: ":8443", SecureServing: true},
//	})
//	if err != nil {
//		return err
//	}
//	if err := profiling.AddToManager(mgr, h); err != nil {
//		return err
//	}
//
// then, with the metrics port forwarded:
//
//	go tool pprof https+insecure://localhost:8443/debug/pprof/heap
//
// The metrics server keeps /metrics: controller-runtime's registry already
// exports every Go runtime/metrics series (its Go collector is built with
// MetricsAll), the scheduler-latency and GC-pause histograms among them, so
// the handler needs no WithMetrics here.
package profiling

import (
	"fmt"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/cachetune/cachetune/pkg/profile"
)

// metricsPath is the metrics server's own endpoint, which an extra handler
// may not replace.
const metricsPath = "/metrics"

// ExtraHandlers returns h's endpoints for metricsserver.Options.ExtraHandlers:
// every path h serves but /metrics, which the metrics server serves itself.
func ExtraHandlers(h *profile.Handler) map[string]http.Handler {
	out := map[string]http.Handler{}
	for _, p := range h.Paths() {
		if p != metricsPath {
			out[p] = h
		}
	}
	return out
}

// AddToManager mounts h's endpoints (ExtraHandlers) on mgr's metrics server.
// Call it before mgr.Start. The metrics server's requests end when the
// manager stops (their context is the manager's), so a 30-second profile in
// flight does not hold the shutdown. A manager whose metrics server is
// disabled (BindAddress "0") serves nothing, as with any extra handler.
func AddToManager(mgr manager.Manager, h *profile.Handler) error {
	for p, handler := range ExtraHandlers(h) {
		if err := mgr.AddMetricsServerExtraHandler(p, handler); err != nil {
			return fmt.Errorf("profiling: metrics server path %s: %w", p, err)
		}
	}
	return nil
}
