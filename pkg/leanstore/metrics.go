package leanstore

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cachetune/cachetune/internal/status"
)

// newMetrics registers a factory's Prometheus metrics with r: the counters its
// informers' status reporters add to, which it returns, and the census and
// shard collectors that read its informers at each scrape. A nil r records
// nothing (nil counters).
func newMetrics(factory string, r prometheus.Registerer, informers func() []*Informer) (*status.Counters, error) {
	if r == nil {
		return nil, nil
	}
	constLabels := prometheus.Labels{"factory": factory}
	counters := status.NewCounters(constLabels)
	collectors := append(counters.Collectors(),
		&censusCollector{informers: informers, constLabels: constLabels},
		newShardCollector(informers, constLabels))
	for _, c := range collectors {
		if err := r.Register(c); err != nil {
			return nil, err
		}
	}
	return counters, nil
}

// censusCollector takes a census of every informer at each scrape.
type censusCollector struct {
	informers   func() []*Informer
	constLabels prometheus.Labels
	once        sync.Once
	objects     *prometheus.Desc
	bytes       *prometheus.Desc
	synced      *prometheus.Desc
	failing     *prometheus.Desc
}

func (c *censusCollector) init() {
	c.once.Do(func() {
		labels := []string{"informer", "resource"}
		c.objects = prometheus.NewDesc("cachetune_leanstore_objects", "Objects held by a leanstore informer's store.", labels, c.constLabels)
		c.bytes = prometheus.NewDesc("cachetune_leanstore_estimated_bytes", "Estimated heap bytes held by a leanstore informer's store (sampled).", labels, c.constLabels)
		c.synced = prometheus.NewDesc("cachetune_leanstore_synced", "1 when the informer has synced.", labels, c.constLabels)
		c.failing = prometheus.NewDesc("cachetune_leanstore_consecutive_failures", "Consecutive list/watch failures of the informer (0 when healthy).", labels, c.constLabels)
	})
}

func (c *censusCollector) Describe(ch chan<- *prometheus.Desc) {
	c.init()
	ch <- c.objects
	ch <- c.bytes
	ch <- c.synced
	ch <- c.failing
}

func (c *censusCollector) Collect(ch chan<- prometheus.Metric) {
	c.init()
	for _, inf := range c.informers() {
		cen := inf.Census()
		st := inf.Status()
		synced := 0.0
		if st.Synced {
			synced = 1
		}
		ch <- prometheus.MustNewConstMetric(c.objects, prometheus.GaugeValue, float64(cen.Objects), inf.name, cen.Resource)
		ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(cen.EstimatedBytes), inf.name, cen.Resource)
		ch <- prometheus.MustNewConstMetric(c.synced, prometheus.GaugeValue, synced, inf.name, cen.Resource)
		ch <- prometheus.MustNewConstMetric(c.failing, prometheus.GaugeValue, float64(st.ConsecutiveFailures), inf.name, cen.Resource)
	}
}
