package diagnose

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	churnUpdatesDesc = prometheus.NewDesc("cachetune_diagnose_churn_updates_total",
		"Updates observed by the churn detector, by class (spec, status, metadata, status+metadata, resource-version, unknown-body).",
		[]string{"resource", "class"}, nil)
	churnTrackedDesc = prometheus.NewDesc("cachetune_diagnose_churn_tracked_objects",
		"Objects whose recent updates the churn detector keeps.",
		[]string{"resource"}, nil)
	churnEvictedDesc = prometheus.NewDesc("cachetune_diagnose_churn_evicted_objects_total",
		"Objects dropped because the churn detector's cap was reached; if it grows fast, raise WithMaxObjects.",
		[]string{"resource"}, nil)
	churnFindingsDesc = prometheus.NewDesc("cachetune_diagnose_churn_findings",
		"Current churn findings by kind (loop, ping-pong).",
		[]string{"resource", "kind"}, nil)
	churnFindingDesc = prometheus.NewDesc("cachetune_diagnose_churn_finding_updates",
		"Updates in the window of one object flagged as a loop or ping-pong, with the managers involved.",
		[]string{"resource", "kind", "namespace", "name", "managers"}, nil)

	stuckCountDesc = prometheus.NewDesc("cachetune_diagnose_stuck_terminating_objects",
		"Objects Terminating for longer than the threshold, at the latest scan.",
		[]string{"resource"}, nil)
	stuckAgeDesc = prometheus.NewDesc("cachetune_diagnose_stuck_terminating_age_seconds",
		"Seconds since the deletionTimestamp of an object stuck Terminating, with its finalizers; the oldest objects up to WithMaxFindings.",
		[]string{"resource", "namespace", "name", "finalizers"}, nil)
)

// churnCollector exports a churn detector's counts and findings to
// Prometheus (WithMetrics):
// cachetune_diagnose_churn_updates_total{resource,class},
// cachetune_diagnose_churn_tracked_objects, cachetune_diagnose_churn_evicted_objects_total,
// cachetune_diagnose_churn_findings{kind} and, per finding (at most WithMaxFindings
// series), cachetune_diagnose_churn_finding_updates{kind,namespace,name,managers}.
type churnCollector struct{ d *ChurnDetector }

func (c churnCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, desc := range []*prometheus.Desc{churnUpdatesDesc, churnTrackedDesc, churnEvictedDesc, churnFindingsDesc, churnFindingDesc} {
		ch <- desc
	}
}

func (c churnCollector) Collect(ch chan<- prometheus.Metric) {
	d := c.d
	findings := d.Findings()
	d.mu.Lock()
	updates, tracked, evicted := d.updates, len(d.objects), d.evicted
	d.mu.Unlock()
	res := d.o.resource
	for _, class := range Classes {
		ch <- prometheus.MustNewConstMetric(churnUpdatesDesc, prometheus.CounterValue, float64(updates[class]), res, class.String())
	}
	ch <- prometheus.MustNewConstMetric(churnTrackedDesc, prometheus.GaugeValue, float64(tracked), res)
	ch <- prometheus.MustNewConstMetric(churnEvictedDesc, prometheus.CounterValue, float64(evicted), res)
	counts := map[FindingKind]int{FindingLoop: 0, FindingPingPong: 0}
	for _, f := range findings {
		counts[f.Kind]++
		ch <- prometheus.MustNewConstMetric(churnFindingDesc, prometheus.GaugeValue, float64(f.Updates),
			res, string(f.Kind), f.Object.Namespace, f.Object.Name, strings.Join(f.Managers, ","))
	}
	for _, kind := range []FindingKind{FindingLoop, FindingPingPong} {
		ch <- prometheus.MustNewConstMetric(churnFindingsDesc, prometheus.GaugeValue, float64(counts[kind]), res, string(kind))
	}
}

// stuckCollector exports a stuck detector's latest scan to Prometheus
// (WithMetrics):
// cachetune_diagnose_stuck_terminating_objects{resource} and, for the oldest objects up
// to WithMaxFindings, cachetune_diagnose_stuck_terminating_age_seconds
// {resource,namespace,name,finalizers}. Ages are those of the scan; run scans
// periodically (Run) to keep them current.
type stuckCollector struct{ s *StuckDetector }

func (c stuckCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- stuckCountDesc
	ch <- stuckAgeDesc
}

func (c stuckCollector) Collect(ch chan<- prometheus.Metric) {
	last := c.s.Last()
	ch <- prometheus.MustNewConstMetric(stuckCountDesc, prometheus.GaugeValue, float64(len(last)), c.s.o.resource)
	for i, st := range last {
		if i == c.s.o.maxFindings {
			break
		}
		ch <- prometheus.MustNewConstMetric(stuckAgeDesc, prometheus.GaugeValue, st.Age.Seconds(),
			c.s.o.resource, st.Object.Namespace, st.Object.Name, strings.Join(st.Finalizers, ","))
	}
}
