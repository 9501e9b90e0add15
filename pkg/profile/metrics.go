package profile

import (
	"fmt"
	"net/http"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// runtimeMetricRules selects the runtime/metrics the Go collector exports on
// top of its defaults: the scheduler (latency histogram
// go_sched_latencies_seconds, GC pause histogram
// go_sched_pauses_total_gc_seconds, goroutines), the GC (heap goal, cycles),
// the memory classes (live heap objects) and the CPU classes (GC CPU time).
// Each is a read of runtime/metrics: no stop-the-world.
var runtimeMetricRules = []collectors.GoRuntimeMetricsRule{
	collectors.MetricsScheduler,
	collectors.MetricsGC,
	collectors.MetricsMemory,
	{Matcher: regexp.MustCompile(`^/cpu/classes/.*`)},
}

// NewRuntimeCollector returns the Prometheus collector Start registers: Go's
// collector with the runtime/metrics above. Register it yourself when the
// process serves /metrics from a server of its own.
func NewRuntimeCollector() prometheus.Collector {
	return collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(runtimeMetricRules...))
}

// metricsRegistration is what Start registered, and what it replaced, so
// that Shutdown can leave a shared registry as it found it.
type metricsRegistration struct {
	handler    http.Handler
	registerer prometheus.Registerer
	added      []prometheus.Collector
	replaced   []prometheus.Collector
}

// registerMetrics registers the runtime and process collectors. The stock Go
// and process collectors (what prometheus.DefaultRegisterer starts with)
// are taken out first: their metric names overlap with these.
func registerMetrics(registerer prometheus.Registerer) (*metricsRegistration, error) {
	if registerer == nil {
		registerer = prometheus.NewRegistry()
	}
	gatherer, ok := registerer.(prometheus.Gatherer)
	if !ok {
		return nil, fmt.Errorf("profile: WithMetrics: %T is not a prometheus.Gatherer, so /metrics could not serve it: pass a *prometheus.Registry", registerer)
	}
	m := &metricsRegistration{registerer: registerer}
	for _, pair := range []struct{ ours, stock prometheus.Collector }{
		{NewRuntimeCollector(), collectors.NewGoCollector()},
		{collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})},
	} {
		// Unregister matches by the set of descriptors, so a fresh stock
		// collector removes the registered one.
		if registerer.Unregister(pair.stock) {
			m.replaced = append(m.replaced, pair.stock)
		}
		if err := registerer.Register(pair.ours); err != nil {
			m.unregister()
			return nil, fmt.Errorf("profile: register runtime metrics (a Go or process collector with other options is registered already?): %w", err)
		}
		m.added = append(m.added, pair.ours)
	}
	m.handler = promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		// A collector that fails should not hide the others.
		ErrorHandling: promhttp.ContinueOnError,
	})
	return m, nil
}

// unregister removes what registerMetrics added and restores what it replaced.
func (m *metricsRegistration) unregister() {
	for _, c := range m.added {
		m.registerer.Unregister(c)
	}
	for _, c := range m.replaced {
		_ = m.registerer.Register(c)
	}
	m.added, m.replaced = nil, nil
}
