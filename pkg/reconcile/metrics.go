package reconcile

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are a loop's Prometheus metrics, every one labelled
// controller=<loop name>. They are always counted; WithMetrics registers
// them.
type metrics struct {
	reconciles *prometheus.CounterVec
	errors     *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	triggers   *prometheus.CounterVec
	dropped    *prometheus.CounterVec
	merged     prometheus.Counter
	hooks      *prometheus.CounterVec
	gauges     []gauge
	loop       *Loop
}

// gauge is a value read from the loop's Stats at each scrape.
type gauge struct {
	desc  *prometheus.Desc
	value func(Stats) float64
}

var _ prometheus.Collector = (*metrics)(nil)

func newMetrics(name string, l *Loop) *metrics {
	labels := prometheus.Labels{"controller": name}
	opts := func(metric, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "cachetune", Subsystem: "reconcile", Name: metric, Help: help, ConstLabels: labels}
	}
	counter := func(metric, help string, vars ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts(opts(metric, help)), vars)
	}
	newGauge := func(metric, help string, f func(Stats) float64) gauge {
		fq := prometheus.BuildFQName("cachetune", "reconcile", metric)
		return gauge{desc: prometheus.NewDesc(fq, help, nil, labels), value: f}
	}
	m := &metrics{
		reconciles: counter("total", "Reconciles by outcome: success, requeue, retry (transient error), parked (permanent error), canceled.", "outcome"),
		errors: counter("errors_total", "Failed reconciles by error class (package failure): reason, cause, and kind transient, permanent or neither.",
			"reason", "cause", "kind"),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "cachetune", Subsystem: "reconcile", Name: "duration_seconds", ConstLabels: labels,
			Help: "Time spent in the reconcile function, by outcome.",
			// 1 ms to about 65 s.
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 17),
		}, []string{"outcome"}),
		triggers: counter("triggers_total", "Reasons reconciles ran, one count per reason when several merged into one run.", "trigger"),
		dropped:  counter("events_dropped_total", "Informer events dropped before the queue: reason parked is an event of the version a parked key failed on.", "reason"),
		merged: prometheus.NewCounter(prometheus.CounterOpts(opts("merged_total",
			"Keys the workqueue handed out whose reasons an earlier reconcile had already served: runs saved."))),
		hooks: counter("hooks_total", "Asynchronous hook calls by hook (permanent, error) and result (ok, error, timeout, skipped).", "hook", "result"),
	}
	m.loop = l
	m.gauges = []gauge{
		newGauge("queue_depth", "Keys due and waiting for a worker.", func(s Stats) float64 { return float64(s.Queued) }),
		newGauge("queue_oldest_seconds", "How long the oldest due key has waited for a worker.", func(s Stats) float64 { return s.OldestQueued.Seconds() }),
		newGauge("scheduled_keys", "Keys waiting for a time: a backoff, a RequeueAfter, a debounce window.", func(s Stats) float64 { return float64(s.Scheduled) }),
		newGauge("backoff_keys", "Keys whose last reconcile failed with a transient error.", func(s Stats) float64 { return float64(s.InBackoff) }),
		newGauge("parked_keys", "Keys whose last reconcile failed with a permanent error, waiting for a change.", func(s Stats) float64 { return float64(s.Parked) }),
		newGauge("active", "Reconciles running now.", func(s Stats) float64 { return float64(s.Active) }),
		newGauge("workers", "Configured workers: the most reconciles that run at once.", func(Stats) float64 { return float64(l.o.workers) }),
	}
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.reconciles, m.errors, m.duration, m.triggers, m.dropped, m.merged, m.hooks}
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
	for _, g := range m.gauges {
		ch <- g.desc
	}
}

// Collect implements prometheus.Collector. The gauges come from one Stats
// snapshot per scrape.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
	s := m.loop.Stats()
	for _, g := range m.gauges {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.value(s))
	}
}
