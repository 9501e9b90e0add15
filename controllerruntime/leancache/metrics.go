package leancache

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Each informer is a leanstore informer of its own, whose metrics leanstore
// registers with a recorder instead of a real registry. One collector per
// Cache then collects the recorded metrics of every informer that is running,
// so that informers created, removed and created again over a manager's life
// never collide on the registry, and a stopped informer stops reporting.
//
// The collector is unchecked (it describes nothing up front): the set of
// informers, and so of series, is only known while the cache runs.

// recorder is the prometheus.Registerer leanstore registers one informer's
// collectors with: it only keeps them.
type recorder struct {
	mu         sync.Mutex
	collectors []prometheus.Collector
}

var _ prometheus.Registerer = (*recorder)(nil)

func (r *recorder) Register(c prometheus.Collector) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r *recorder) Unregister(c prometheus.Collector) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, x := range r.collectors {
		if x == c {
			r.collectors = append(r.collectors[:i], r.collectors[i+1:]...)
			return true
		}
	}
	return false
}

func (r *recorder) collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	cs := append([]prometheus.Collector(nil), r.collectors...)
	r.mu.Unlock()
	for _, c := range cs {
		c.Collect(ch)
	}
}

// collector collects the metrics of a Cache's live informers.
type collector struct {
	owner *Cache
}

// Describe describes nothing: the collector is unchecked.
func (collector) Describe(chan<- *prometheus.Desc) {}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, inf := range c.owner.all() {
		inf.metrics.collect(ch)
	}
}
