package diagnose

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// gather returns every sample of the registry keyed "name{v1,v2,...}" with label
// values in label-name order.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := m.GetLabel()
			sort.Slice(labels, func(i, j int) bool { return labels[i].GetName() < labels[j].GetName() })
			var vals []string
			for _, l := range labels {
				vals = append(vals, l.GetValue())
			}
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			out[mf.GetName()+"{"+strings.Join(vals, ",")+"}"] = v
		}
	}
	return out
}

func TestChurnCollector(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	d, clk := newTestDetector(WithWindow(4*time.Second), WithLoopThreshold(3), WithMetrics(reg))
	o := newObject("looping")
	for i := 0; i < 4; i++ {
		clk.Step(time.Second)
		d.Observe(o.next(statusWrite(clk.Now())))
	}
	q := newObject("quiet")
	d.Observe(q.next(func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }))
	want := map[string]float64{
		"cachetune_diagnose_churn_updates_total{spec,pods}":             0,
		"cachetune_diagnose_churn_updates_total{status,pods}":           4,
		"cachetune_diagnose_churn_updates_total{metadata,pods}":         1,
		"cachetune_diagnose_churn_updates_total{status+metadata,pods}":  0,
		"cachetune_diagnose_churn_updates_total{resource-version,pods}": 0,
		"cachetune_diagnose_churn_updates_total{unknown-body,pods}":     0,
		"cachetune_diagnose_churn_tracked_objects{pods}":                2,
		"cachetune_diagnose_churn_evicted_objects_total{pods}":          0,
		"cachetune_diagnose_churn_findings{loop,pods}":                  1,
		"cachetune_diagnose_churn_findings{ping-pong,pods}":             0,
		// kind, managers, name, namespace, resource
		"cachetune_diagnose_churn_finding_updates{loop,looper,looping,ns,pods}": 4,
	}
	if diff := cmp.Diff(want, gather(t, reg)); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

func TestStuckCollector(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	reg := prometheus.NewPedanticRegistry()
	s, err := NewStuckDetector(WithClock(clk), WithThreshold(time.Minute), WithResource("configmaps"), WithMaxFindings(1), WithMetrics(reg))
	if err != nil {
		t.Fatal(err)
	}
	at := func(ago time.Duration) *metav1.Time { ts := metav1.NewTime(t0.Add(-ago)); return &ts }
	s.Scan([]any{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x", DeletionTimestamp: at(90 * time.Second), Finalizers: []string{"f1", "f2"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "y", DeletionTimestamp: at(70 * time.Second), Finalizers: []string{"f1"}}},
	})
	want := map[string]float64{
		"cachetune_diagnose_stuck_terminating_objects{configmaps}": 2,
		// finalizers, name, namespace, resource; only the oldest under a cap of 1
		"cachetune_diagnose_stuck_terminating_age_seconds{f1,f2,x,a,configmaps}": 90,
	}
	if diff := cmp.Diff(want, gather(t, reg)); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}
