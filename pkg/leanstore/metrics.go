package leanstore

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are a factory's Prometheus metrics. A nil *metrics records nothing.
type metrics struct {
	failures  *prometheus.CounterVec
	lists     *prometheus.CounterVec
	forcedGCs *prometheus.CounterVec
	mutations *prometheus.CounterVec
	census    *censusCollector
	shard     *shardCollector // gauges of sharded informers (shard_metrics.go)
}

func newMetrics(factory string, r prometheus.Registerer, informers func() []*Informer) (*metrics, error) {
	if r == nil {
		return nil, nil
	}
	constLabels := prometheus.Labels{"factory": factory}
	m := &metrics{
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
		census: &censusCollector{informers: informers, constLabels: constLabels},
		shard:  newShardCollector(informers, constLabels),
	}
	for _, c := range []prometheus.Collector{m.failures, m.lists, m.forcedGCs, m.mutations, m.census, m.shard} {
		if err := r.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) failure(f failedAttempt) {
	if m == nil {
		return
	}
	m.failures.WithLabelValues(f.Informer, f.Resource, string(f.Reason), string(f.Class.Cause)).Inc()
}

func (m *metrics) listed(informer, resource string, path ListPath) {
	if m == nil {
		return
	}
	m.lists.WithLabelValues(informer, resource, string(path)).Inc()
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
