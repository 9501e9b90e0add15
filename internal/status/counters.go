package status

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cachetune/cachetune/internal/reflector"
)

// Counters are the Prometheus counters the Reporters of one factory add to.
// A nil *Counters counts nothing.
type Counters struct {
	failures  *prometheus.CounterVec
	lists     *prometheus.CounterVec
	forcedGCs *prometheus.CounterVec
	mutations *prometheus.CounterVec
}

// NewCounters returns a factory's counters, labelled with constLabels; the
// caller registers them (Collectors).
func NewCounters(constLabels prometheus.Labels) *Counters {
	return &Counters{
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "cachetune", Subsystem: "leanstore", Name: "failures_total",
			Help:        "List and watch failures of leanstore informers, by watcher stage (reason) and cause.",
			ConstLabels: constLabels,
		}, []string{"informer", "resource", "reason", "cause"}),
		lists: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "cachetune", Subsystem: "leanstore", Name: "lists_total",
			Help:        "Completed lists of leanstore informers, by list path (streaming or list).",
			ConstLabels: constLabels,
		}, []string{"informer", "resource", "path"}),
		forcedGCs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "cachetune", Subsystem: "leanstore", Name: "forced_gcs_total",
			Help:        "Garbage collections run by the heap bound of leanstore informers during lists.",
			ConstLabels: constLabels,
		}, []string{"informer", "resource"}),
		mutations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "cachetune", Subsystem: "leanstore", Name: "mutations_total",
			Help:        "Shared values of cached objects found changed in place by the mutation guard.",
			ConstLabels: constLabels,
		}, []string{"informer", "resource"}),
	}
}

// Collectors returns the counters, to register.
func (c *Counters) Collectors() []prometheus.Collector {
	return []prometheus.Collector{c.failures, c.lists, c.forcedGCs, c.mutations}
}

func (c *Counters) failure(f reflector.FailedAttempt) {
	if c == nil {
		return
	}
	c.failures.WithLabelValues(f.Informer, f.Resource, string(f.Reason), string(f.Class.Cause)).Inc()
}

func (c *Counters) listed(informer, resource string, path reflector.ListPath) {
	if c == nil {
		return
	}
	c.lists.WithLabelValues(informer, resource, string(path)).Inc()
}

func (c *Counters) forcedGC(informer, resource string) {
	if c == nil {
		return
	}
	c.forcedGCs.WithLabelValues(informer, resource).Inc()
}

func (c *Counters) mutated(informer, resource string, n int) {
	if c == nil {
		return
	}
	c.mutations.WithLabelValues(informer, resource).Add(float64(n))
}
