package predicate_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/predicate"
)

// meta describes one object state; each test renders it as a typed ConfigMap,
// an unstructured object and a PartialObjectMetadata.
type meta struct {
	rv, gen     int64
	labels      map[string]string
	annotations map[string]string
	finalizers  []string
	deleting    bool
}

func (m meta) objectMeta() metav1.ObjectMeta {
	om := metav1.ObjectMeta{
		Name: "x", Namespace: "ns", ResourceVersion: strconv.FormatInt(m.rv, 10), Generation: m.gen,
		Labels: m.labels, Annotations: m.annotations, Finalizers: m.finalizers,
	}
	if m.deleting {
		ts := metav1.NewTime(time.Unix(1700000000, 0))
		om.DeletionTimestamp = &ts
	}
	return om
}

var renderings = map[string]func(meta) any{
	"typed": func(m meta) any { return &corev1.ConfigMap{ObjectMeta: m.objectMeta()} },
	"unstructured": func(m meta) any {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
		om := m.objectMeta()
		u.SetName(om.Name)
		u.SetNamespace(om.Namespace)
		u.SetResourceVersion(om.ResourceVersion)
		u.SetGeneration(om.Generation)
		u.SetLabels(om.Labels)
		u.SetAnnotations(om.Annotations)
		u.SetFinalizers(om.Finalizers)
		u.SetDeletionTimestamp(om.DeletionTimestamp)
		return u
	},
	"partial": func(m meta) any {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: m.objectMeta()}
	},
}

func TestUpdatePredicates(t *testing.T) {
	base := meta{rv: 1, gen: 1, labels: map[string]string{"a": "1"}, annotations: map[string]string{"n": "1"}, finalizers: []string{"f"}}
	change := func(f func(*meta)) meta {
		m := base
		m.rv = 2
		f(&m)
		return m
	}
	predicates := map[string]func() *predicate.Counted{
		"generation":       predicate.GenerationChanged,
		"resource-version": predicate.ResourceVersionChanged,
		"labels":           predicate.LabelsChanged,
		"annotations":      predicate.AnnotationsChanged,
		"finalizers":       predicate.FinalizersChanged,
		"deletion-started": predicate.DeletionStarted,
	}
	tests := []struct {
		name   string
		old    meta
		new    meta
		passes []string // predicates that pass this update
	}{
		{"resync", base, base, nil},
		{"status only", base, change(func(*meta) {}), []string{"resource-version"}},
		{"generation", base, change(func(m *meta) { m.gen = 2 }), []string{"generation", "resource-version"}},
		{"label added", base, change(func(m *meta) { m.labels = map[string]string{"a": "1", "b": "2"} }), []string{"labels", "resource-version"}},
		{"label value", base, change(func(m *meta) { m.labels = map[string]string{"a": "2"} }), []string{"labels", "resource-version"}},
		{"annotation removed", base, change(func(m *meta) { m.annotations = nil }), []string{"annotations", "resource-version"}},
		{"finalizer added", base, change(func(m *meta) { m.finalizers = []string{"f", "g"} }), []string{"finalizers", "resource-version"}},
		{"finalizers removed", base, change(func(m *meta) { m.finalizers = nil }), []string{"finalizers", "resource-version"}},
		{"deletion started", base, change(func(m *meta) { m.deleting = true; m.gen = 2 }), []string{"deletion-started", "generation", "resource-version"}},
		{"already deleting", change(func(m *meta) { m.deleting = true }), change(func(m *meta) { m.deleting = true; m.rv = 3; m.finalizers = nil }), []string{"finalizers", "resource-version"}},
	}
	for kind, render := range renderings {
		for _, tt := range tests {
			t.Run(kind+"/"+tt.name, func(t *testing.T) {
				var got []string
				for _, name := range []string{"annotations", "deletion-started", "finalizers", "generation", "labels", "resource-version"} {
					p := predicates[name]()
					if p.Name() != name {
						t.Fatalf("Name() = %q, want %q", p.Name(), name)
					}
					if p.Update(render(tt.old), render(tt.new)) {
						got = append(got, name)
					}
				}
				want := slices.Sorted(slices.Values(tt.passes))
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("passing predicates (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestCreateAndDelete(t *testing.T) {
	live := meta{rv: 1, gen: 1}
	deleting := meta{rv: 1, gen: 1, deleting: true}
	for kind, render := range renderings {
		t.Run(kind, func(t *testing.T) {
			for _, p := range []*predicate.Counted{predicate.GenerationChanged(), predicate.ResourceVersionChanged(),
				predicate.LabelsChanged(), predicate.AnnotationsChanged(), predicate.FinalizersChanged()} {
				if !p.Create(render(live)) || !p.Delete(render(live)) {
					t.Errorf("%s: a change predicate must pass creates and deletes", p.Name())
				}
				if !p.Delete(cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: render(live)}) {
					t.Errorf("%s: tombstone delete filtered", p.Name())
				}
			}
			d := predicate.DeletionStarted()
			if d.Create(render(live)) {
				t.Error("deletion-started passed the create of a live object")
			}
			if !d.Create(render(deleting)) {
				t.Error("deletion-started filtered the create of a Terminating object")
			}
			if !d.Delete(render(live)) || !d.Delete(cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: render(live)}) {
				t.Error("deletion-started filtered a delete")
			}
			want := predicate.Stats{Create: predicate.Counts{Passed: 1, Filtered: 1}, Delete: predicate.Counts{Passed: 2}}
			if diff := cmp.Diff(want, d.Stats()); diff != "" {
				t.Errorf("deletion-started stats (-want +got):\n%s", diff)
			}
		})
	}
}

// A custom predicate reads the tombstone's object, and an event without any
// object passes unjudged.
func TestTombstones(t *testing.T) {
	var seen []string
	p := predicate.New("keep-x", predicate.Funcs{Delete: func(obj metav1.Object) bool {
		seen = append(seen, obj.GetName())
		return obj.GetName() == "x"
	}})
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	}
	results := []bool{
		p.Delete(cm("x")),
		p.Delete(cm("y")),
		p.Delete(cache.DeletedFinalStateUnknown{Key: "ns/y", Obj: cm("y")}),
		p.Delete(&cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: cm("x")}),
		p.Delete(cache.DeletedFinalStateUnknown{Key: "ns/z"}), // final state unknown: passes unjudged
		p.Delete((*corev1.ConfigMap)(nil)),
	}
	if diff := cmp.Diff([]bool{true, false, false, true, true, true}, results); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"x", "y", "y", "x"}, seen); diff != "" {
		t.Errorf("objects judged (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(predicate.Stats{Delete: predicate.Counts{Passed: 4, Filtered: 2}}, p.Stats()); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestCombinators(t *testing.T) {
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", ResourceVersion: "1", Generation: 1}}
	finalizer := old.DeepCopy()
	finalizer.ResourceVersion, finalizer.Finalizers = "2", []string{"f"}
	spec := old.DeepCopy()
	spec.ResourceVersion, spec.Generation = "3", 2
	status := old.DeepCopy()
	status.ResourceVersion = "4"

	gen, fin := predicate.GenerationChanged(), predicate.FinalizersChanged()
	anyP := predicate.Any(gen, fin)
	allP := predicate.All(predicate.ResourceVersionChanged(), predicate.Not(predicate.LabelsChanged()))
	named := predicate.Any(predicate.GenerationChanged(), predicate.FinalizersChanged()).Named("trigger")
	if anyP.Name() != "any(generation,finalizers)" || allP.Name() != "all(resource-version,not(labels))" || named.Name() != "trigger" {
		t.Fatalf("names %q %q %q", anyP.Name(), allP.Name(), named.Name())
	}
	var got []bool
	for _, n := range []*corev1.ConfigMap{finalizer, spec, status} {
		got = append(got, anyP.Update(old, n), allP.Update(old, n), named.Update(old, n))
	}
	want := []bool{true, true, true, true, true, true, false, true, false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	// Any let both operands judge all three updates: no short cut.
	if diff := cmp.Diff(predicate.Counts{Passed: 1, Filtered: 2}, gen.Stats().Update); diff != "" {
		t.Errorf("generation operand (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(predicate.Counts{Passed: 1, Filtered: 2}, fin.Stats().Update); diff != "" {
		t.Errorf("finalizers operand (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(predicate.Counts{Passed: 2, Filtered: 1}, anyP.Stats().Update); diff != "" {
		t.Errorf("any (-want +got):\n%s", diff)
	}
	if !predicate.All().Update(old, status) || predicate.Any().Update(old, status) {
		t.Error("All() must pass and Any() must filter")
	}
	if predicate.Not(predicate.GenerationChanged()).Create(old) {
		t.Error("Not(change predicate) must filter creates")
	}
}

type recorder struct{ adds, updates, deletes int }

func (r *recorder) OnAdd(any, bool)   { r.adds++ }
func (r *recorder) OnUpdate(_, _ any) { r.updates++ }
func (r *recorder) OnDelete(any)      { r.deletes++ }

func TestHandler(t *testing.T) {
	r := &recorder{}
	h := predicate.Handler(predicate.GenerationChanged(), r)
	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", ResourceVersion: "1", Generation: 1}}
	b := a.DeepCopy()
	b.ResourceVersion = "2"
	c := b.DeepCopy()
	c.ResourceVersion, c.Generation = "3", 2
	h.OnAdd(a, true)
	h.OnUpdate(a, b)
	h.OnUpdate(b, c)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "x", Obj: c})
	if diff := cmp.Diff(recorder{adds: 1, updates: 1, deletes: 1}, *r, cmp.AllowUnexported(recorder{})); diff != "" {
		t.Errorf("events reaching the handler (-want +got):\n%s", diff)
	}
}
