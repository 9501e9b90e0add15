package doctor

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

func discoveryFixture() []servedResource {
	return served([]*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Kind: "Pod", Namespaced: true, ShortNames: []string{"po"}, Verbs: []string{"get", "list", "watch"}},
			{Name: "pods/status", Kind: "Pod", Namespaced: true, Verbs: []string{"get", "patch"}},
			{Name: "nodes", SingularName: "node", Kind: "Node", Verbs: []string{"list", "watch"}},
			{Name: "bindings", SingularName: "binding", Kind: "Binding", Namespaced: true, Verbs: []string{"create"}},
		}},
		{GroupVersion: "bench.cachetune.dev/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", SingularName: "widget", Kind: "Widget", Namespaced: true, Verbs: []string{"list", "watch"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", Kind: "Deployment", Namespaced: true, ShortNames: []string{"deploy"}, Verbs: []string{"list", "watch"}},
		}},
	})
}

func TestResolve(t *testing.T) {
	all := discoveryFixture()
	gvr := func(g, v, r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: g, Version: v, Resource: r}
	}
	for _, tc := range []struct {
		names     []string
		namespace string
		want      []schema.GroupVersionResource
		err       string
	}{
		{names: []string{"pods"}, want: []schema.GroupVersionResource{gvr("", "v1", "pods")}},
		{names: []string{"po", "Deployment", "widgets.bench.cachetune.dev", "pod"},
			want: []schema.GroupVersionResource{gvr("", "v1", "pods"), gvr("apps", "v1", "deployments"), gvr("bench.cachetune.dev", "v1", "widgets")}},
		{names: []string{"deploy.apps"}, want: []schema.GroupVersionResource{gvr("apps", "v1", "deployments")}},
		// all: listable and watchable, subresources left out, core first.
		{names: []string{"all"}, want: []schema.GroupVersionResource{gvr("", "v1", "nodes"), gvr("", "v1", "pods"), gvr("apps", "v1", "deployments"), gvr("bench.cachetune.dev", "v1", "widgets")}},
		// all in a namespace: namespaced resources only.
		{names: []string{"all"}, namespace: "shop", want: []schema.GroupVersionResource{gvr("", "v1", "pods"), gvr("apps", "v1", "deployments"), gvr("bench.cachetune.dev", "v1", "widgets")}},
		{names: []string{"gadgets"}, err: `invalid option: the cluster serves no resource named "gadgets"`},
		{names: []string{"bindings"}, err: "invalid option: bindings cannot be listed and watched (verbs: create)"},
	} {
		t.Run(fmt.Sprint(tc.names, tc.namespace), func(t *testing.T) {
			got, err := resolve(tc.names, all, tc.namespace)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gvrs []schema.GroupVersionResource
			for _, x := range got {
				gvrs = append(gvrs, x.gvr)
			}
			if diff := cmp.Diff(tc.want, gvrs); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	got, _ := resolve([]string{"pods", "widgets"}, all, "")
	if !got[0].builtIn || got[1].builtIn {
		t.Errorf("built-in: pods %v, widgets %v; want true, false", got[0].builtIn, got[1].builtIn)
	}
}

func TestSizes(t *testing.T) {
	var s sizes
	item := func(ns, name string, mf, la string, pad int) json.RawMessage {
		meta := map[string]any{"name": name, "namespace": ns}
		if mf != "" {
			meta["managedFields"] = json.RawMessage(mf)
		}
		if la != "" {
			meta["annotations"] = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": la, "other": "x"}
		}
		b, err := json.Marshal(map[string]any{"metadata": meta, "data": map[string]string{"pad": string(make([]byte, pad))}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	items := []json.RawMessage{
		item("a", "one", `[{"manager":"m"}]`, "0123456789", 10),
		item("a", "two", `null`, "", 100),
		item("b", "three", `[]`, "", 50),
		item("a", "four", "", "", 70),
		item("c", "five", "", "", 5),
		item("a", "six", "", "", 80),
	}
	var total int64
	for _, it := range items {
		if err := s.add(it); err != nil {
			t.Fatal(err)
		}
		total += int64(len(it))
	}
	var r Resource
	s.fill(&r)
	if r.Objects != 6 || r.JSON.Total != total || r.ManagedFields.Total != int64(len(`[{"manager":"m"}]`)) || r.LastApplied.Total != 10 {
		t.Errorf("objects %d, JSON %d (want %d), managedFields %d, last-applied %d", r.Objects, r.JSON.Total, total, r.ManagedFields.Total, r.LastApplied.Total)
	}
	var names []string
	for _, o := range r.Largest {
		names = append(names, o.Name)
	}
	if diff := cmp.Diff([]string{"two", "six", "four", "three", "one"}, names); diff != "" {
		t.Errorf("largest (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]NamespaceCount{{"a", 4}, {"b", 1}, {"c", 1}}, r.TopNamespaces); diff != "" || r.Namespaces != 3 {
		t.Errorf("%d namespaces, top (-want +got):\n%s", r.Namespaces, diff)
	}
	if want := float64(len("a/one")+len("a/two")+len("b/three")+len("a/four")+len("c/five")+len("a/six")) / 6; s.meanKey() != want {
		t.Errorf("mean key %.2f, want %.2f", s.meanKey(), want)
	}
}

func TestSamplerIsUniform(t *testing.T) {
	const n, k, runs = 50, 10, 2000
	hits := make([]int, n)
	for run := range runs {
		s := newSampler(k)
		s.rng = rand.New(rand.NewPCG(uint64(run), 7))
		for i := range n {
			decoded := false
			if err := s.offer(func() (runtime.Object, error) {
				decoded = true
				return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i)}}, nil
			}); err != nil {
				t.Fatal(err)
			}
			if i < k && !decoded {
				t.Fatalf("object %d of the first %d was not kept", i, k)
			}
		}
		if len(s.objs) != k {
			t.Fatalf("%d objects kept, want %d", len(s.objs), k)
		}
		for _, o := range s.objs {
			var i int
			_, _ = fmt.Sscan(o.(*metav1.PartialObjectMetadata).Name, &i) // the test's own numeric names
			hits[i]++
		}
	}
	// Each object is kept with probability k/n: 400 times in 2000 runs; allow
	// five standard deviations (about 90).
	for i, h := range hits {
		if h < 310 || h > 490 {
			t.Errorf("object %d kept %d times in %d runs, want about %d", i, h, runs, runs*k/n)
		}
	}
}

// TestProjectionOrder projects a sample of dataset Pods, without a server:
// each strip step must save, metadata-only must be smaller than typed, and the
// totals must be per object times the count.
func TestProjectionOrder(t *testing.T) {
	spec := dataset.Spec{Name: "standard", Namespace: "shop"}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var sample []runtime.Object
	for i := range 50 {
		// NewPod has no managedFields (the server writes them): give it some.
		p := dataset.NewPod(spec, i, now)
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: dataset.ApplyManager, Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fmt.Sprintf(`{"f:metadata":{"f:labels":{"f:pod-%04d":{}}}}`, i) + strings.Repeat(" ", 4000))}}
		sample = append(sample, p)
	}
	got, err := project(sample, true, 1000, 25)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("%d projections, want 6", len(got))
	}
	for i, p := range got {
		t.Logf("%-30s %8.0f B/object", p.Mode, p.PerObject)
		if p.Total != int64(p.PerObject*1000) {
			t.Errorf("%s: total %d, want %.0f", p.Mode, p.Total, p.PerObject*1000)
		}
		if i > 0 && i <= projLean && p.PerObject >= got[i-1].PerObject {
			t.Errorf("%s (%.0f) saves nothing on %s (%.0f)", p.Mode, p.PerObject, got[i-1].Mode, got[i-1].PerObject)
		}
	}
	if m := got[projMetadata]; m.PerObject >= got[projPlain].PerObject || got[projMetadataStripped].PerObject >= m.PerObject {
		t.Errorf("metadata-only %.0f, stripped %.0f, typed %.0f: want stripped < metadata-only < typed",
			m.PerObject, got[projMetadataStripped].PerObject, got[projPlain].PerObject)
	}
}

func TestChurnSettings(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		loop int
	}{{5 * time.Second, 5}, {30 * time.Second, 5}, {2 * time.Minute, 20}, {10 * time.Minute, 100}} {
		w, loop, turns := churnSettings(tc.d)
		if w != tc.d || loop != tc.loop || turns != 4 {
			t.Errorf("%s: window %s, loop %d, turns %d; want %s, %d, 4", tc.d, w, loop, turns, tc.d, tc.loop)
		}
	}
}
