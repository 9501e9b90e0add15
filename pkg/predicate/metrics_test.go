package predicate_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cachetune/cachetune/pkg/predicate"
)

func TestCollector(t *testing.T) {
	gen := predicate.GenerationChanged()
	p := predicate.Any(gen, predicate.FinalizersChanged())
	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", ResourceVersion: "1", Generation: 1}}
	b := a.DeepCopy()
	b.ResourceVersion = "2"
	p.Create(a)
	p.Update(a, b)
	p.Delete(b)

	reg := prometheus.NewPedanticRegistry()
	// gen is reached twice (directly and through p): it must be reported once.
	reg.MustRegister(predicate.NewCollector(p, gen))
	got := gather(t, reg, "cachetune_predicate_events_total")
	want := map[string]float64{}
	for _, name := range []string{"any(generation,finalizers)", "finalizers", "generation"} {
		want["create/"+name+"/passed"] = 1
		want["create/"+name+"/filtered"] = 0
		want["update/"+name+"/passed"] = 0
		want["update/"+name+"/filtered"] = 1
		want["delete/"+name+"/passed"] = 1
		want["delete/"+name+"/filtered"] = 0
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
}

// gather returns the counter values of one metric family keyed by its label
// values joined with "/", in label-name order (event, predicate, result).
func gather(t *testing.T, reg *prometheus.Registry, family string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := m.GetLabel()
			sort.Slice(labels, func(i, j int) bool { return labels[i].GetName() < labels[j].GetName() })
			var vals []string
			for _, l := range labels {
				vals = append(vals, l.GetValue())
			}
			out[strings.Join(vals, "/")] = m.GetCounter().GetValue()
		}
	}
	return out
}
