package shrink

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"reflect"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"
	"weak"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// fill sets every exported field of v reachable from it: each string to a
// value naming its path, each pointer to a new value, each slice to two
// elements and each map with string keys to two entries, down to depth
// levels of pointers and containers. It stands for an object of which every
// field is set, so that a plan that missed a field would show.
func fill(v reflect.Value, path string, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("v" + path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(len(path) % 7))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(len(path) % 7))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		if depth == 0 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), path, depth-1)
	case reflect.Slice:
		if depth == 0 {
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("bytes" + path))
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), fmt.Sprintf("%s[%d]", path, i), depth-1)
		}
		v.Set(s)
	case reflect.Map:
		if depth == 0 || v.Type().Key().Kind() != reflect.String {
			return
		}
		m := reflect.MakeMap(v.Type())
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			k.SetString(fmt.Sprintf("k%s-%d", path, i))
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, fmt.Sprintf("%s{%d}", path, i), depth-1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		switch v.Type() {
		case timeType:
			v.Set(reflect.ValueOf(shareNow))
			return
		case quantityType:
			v.Set(reflect.ValueOf(resource.MustParse("250m")))
			return
		case reflect.TypeFor[intstr.IntOrString]():
			v.Set(reflect.ValueOf(intstr.FromString("port" + path)))
			return
		case reflect.TypeFor[metav1.FieldsV1]():
			v.Set(reflect.ValueOf(metav1.NewFieldsV1(`{"f:spec":{}}`)).Elem())
			return
		}
		for i := range v.NumField() {
			if sf := v.Type().Field(i); sf.IsExported() {
				fill(v.Field(i), path+"."+sf.Name, depth)
			}
		}
	}
}

// stringsOf calls f with every string reachable from v and its path, each
// map key with the map's path and {key}.
func stringsOf(v reflect.Value, f func(path, s string)) {
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.String:
			f(path, v.String())
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem(), path)
			}
		case reflect.Slice, reflect.Array:
			if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
				return
			}
			for i := range v.Len() {
				walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
			}
		case reflect.Map:
			iter := v.MapRange()
			for iter.Next() {
				k := fmt.Sprint(iter.Key().Interface())
				if iter.Key().Kind() == reflect.String {
					f(path+"{"+k+"}", iter.Key().String())
				}
				walk(iter.Value(), path+"["+k+"]")
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if sf := v.Type().Field(i); sf.IsExported() {
					walk(v.Field(i), path+"."+sf.Name)
				}
			}
		}
	}
	walk(v, "")
}

// internedStrings returns every string reachable from v by path, and whether
// it is the canonical copy the table holds: what interning did to v.
func internedStrings(table *shareTable, v reflect.Value) map[string]bool {
	out := map[string]bool{}
	stringsOf(v, func(path, s string) {
		e, ok := table.strs[maphash.String(shareSeed, s)]
		out[path] = s != "" && ok && unsafe.Pointer(e.p.Value()) == unsafe.Pointer(unsafe.StringData(s))
	})
	return out
}

// seedTable makes a canonical copy of every string of obj in table, unique
// ones too, and returns the copies (which the table holds weakly). A walk
// then replaces every string it visits by its copy, whatever the table's
// first-sighting filter would have let in.
func seedTable(table *shareTable, obj any) []string {
	var keep []string
	stringsOf(reflect.ValueOf(obj), func(_, s string) {
		if s == "" || len(s) > maxInternLen {
			return
		}
		c := strings.Clone(s)
		table.strs[maphash.String(shareSeed, c)] = strEntry{p: weak.Make(unsafe.StringData(c)), n: len(c)}
		keep = append(keep, c)
	})
	return keep
}

// internBoth interns a decoded object by the plan and by the reflective walk,
// each with a table of its own seeded with every string of the object, and
// returns what each replaced. decode returns a new copy, every string its own
// allocation.
func internBoth(t *testing.T, decode func() any) (plan, walk map[string]bool) {
	t.Helper()
	pt, wt := newShareTable(false), newShareTable(false)
	pk, wk := seedTable(pt, decode()), seedTable(wt, decode())
	p, w := decode(), decode()
	want := decode()
	interner{pt}.internObject(p)
	walkObject(wt, w, nil, false)
	if !equality.Semantic.DeepEqual(want, p) {
		t.Fatal("interning by the plan changed the object")
	}
	plan, walk = internedStrings(pt, reflect.ValueOf(p)), internedStrings(wt, reflect.ValueOf(w))
	goruntime.KeepAlive(pk)
	goruntime.KeepAlive(wk)
	return plan, walk
}

func decoder[T any](t *testing.T, obj any) func() any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return func() any {
		out := new(T)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// TestInternPlanMatchesTheWalk: interning along a type's plan interns exactly
// the strings the reflective walk (sharing's, and interning's before plans)
// interns, in objects of which every field is set, and in realistic ones.
func TestInternPlanMatchesTheWalk(t *testing.T) {
	full := &corev1.Pod{}
	fill(reflect.ValueOf(full).Elem(), "", 6)
	fullMeta := &metav1.ObjectMeta{}
	fill(reflect.ValueOf(fullMeta).Elem(), "", 6)
	distinct := dataset.NewPod(dataset.Spec{Name: "d", Namespace: "ns", PodShape: dataset.PodsDistinct}, 3, shareNow)
	standard := dataset.NewPod(dataset.Spec{Name: "standard", Namespace: "ns"}, 3, shareNow)
	standard.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}
	partial := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: standard.ObjectMeta}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(standard)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		decode func() any
		// interned and unique are paths the plan must and must not intern.
		interned, unique []string
	}{
		{"every field of a Pod", decoder[corev1.Pod](t, full),
			[]string{".Spec.Containers[0].Image", ".Spec.Containers[1].Env[0].Value", ".Spec.Containers[0].Env[1].ValueFrom.ConfigMapKeyRef.Key",
				".Spec.Volumes[0].Name", ".Spec.Volumes[1].VolumeSource.ConfigMap.Items[0].Path", ".ObjectMeta.Labels{k.ObjectMeta.Labels-0}",
				".ObjectMeta.Labels[k.ObjectMeta.Labels-1]", ".Spec.Containers[0].Resources.Limits{k.Spec.Containers[0].Resources.Limits-0}",
				".Spec.Containers[0].Ports[0].Name", ".Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[1].Values[0]",
				".ObjectMeta.Namespace", ".ObjectMeta.GenerateName", ".ObjectMeta.OwnerReferences[0].Kind", ".Status.ContainerStatuses[0].Image"},
			[]string{".ObjectMeta.Name", ".ObjectMeta.UID", ".ObjectMeta.ResourceVersion", ".ObjectMeta.SelfLink", ".Status.ContainerStatuses[0].ContainerID"}},
		{"every field of an ObjectMeta", decoder[metav1.ObjectMeta](t, fullMeta),
			[]string{".Namespace", ".Annotations[k.Annotations-0]", ".ManagedFields[0].Manager", ".Finalizers[1]"},
			[]string{".Name", ".UID", ".ResourceVersion"}},
		{"a Pod of the distinct dataset", decoder[corev1.Pod](t, distinct), []string{".Spec.Containers[0].Image"}, []string{".ObjectMeta.Name"}},
		{"a Pod of the standard dataset", decoder[corev1.Pod](t, standard), []string{".Spec.Containers[0].Image", ".ObjectMeta.ManagedFields[0].Manager"}, []string{".ObjectMeta.Name"}},
		{"PartialObjectMetadata", decoder[metav1.PartialObjectMetadata](t, partial), []string{".TypeMeta.Kind", ".ObjectMeta.Namespace"}, []string{".ObjectMeta.Name"}},
		{"unstructured", func() any {
			return &unstructured.Unstructured{Object: *decoder[map[string]any](t, u)().(*map[string]any)}
		}, []string{".Object[spec][containers][0][image]", ".Object[metadata][namespace]", ".Object{metadata}"},
			[]string{".Object[metadata][name]", ".Object[metadata][uid]", ".Object[metadata][resourceVersion]"}},
		{"every kind of field", decoder[planProbe](t, newPlanProbe()),
			[]string{".Named", ".Any", ".Anys[1]", ".Anys[2][k]", ".Anys[2]{k}", ".Array[1]", ".Map[k0].Name", ".Map{k0}", ".Recurse.Recurse.Named", ".Recurse.Recurse.Inline.Name", ".Self[0].Named", ".Strs[0]", ".Ptr", ".Inline.Name"},
			[]string{".Numbers[1]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, walk := internBoth(t, tc.decode)
			if !maps.Equal(plan, walk) {
				for _, k := range slices.Sorted(maps.Keys(walk)) {
					if plan[k] != walk[k] {
						t.Errorf("%s: interned by the plan %v, by the walk %v", k, plan[k], walk[k])
					}
				}
				for k := range plan {
					if _, ok := walk[k]; !ok {
						t.Errorf("%s: only in the plan's object", k)
					}
				}
			}
			n := 0
			for _, in := range plan {
				if in {
					n++
				}
			}
			t.Logf("%d of %d strings interned", n, len(plan))

			for _, k := range tc.interned {
				if in, ok := plan[k]; !ok || !in {
					t.Errorf("%s: not interned (present: %v)", k, ok)
				}
			}
			for _, k := range tc.unique {
				if in, ok := plan[k]; !ok || in {
					t.Errorf("%s: unique to the object, but interned (present: %v)", k, ok)
				}
			}
		})
	}
}

// planProbe has a field of every kind a plan treats apart.
type planProbe struct {
	Named   corev1.ResourceName
	Ptr     *string
	Strs    []corev1.Capability
	Any     any
	Anys    []any
	Iface   fmt.Stringer `json:"-"`
	Array   [2]string
	Map     map[string]probeLeaf
	Recurse *planProbe
	Self    []planProbe
	Inline  probeLeaf
	Numbers map[int]string
	Bytes   []byte
}

type probeLeaf struct{ Name string }

func (l probeLeaf) String() string { return l.Name }

func newPlanProbe() *planProbe {
	s := "pointed"
	return &planProbe{
		Named: "named", Ptr: &s, Strs: []corev1.Capability{"NET_ADMIN", "x"}, Any: "any", Anys: []any{int64(1), "anys", map[string]any{"k": "v"}},
		Iface: probeLeaf{Name: "iface"}, Array: [2]string{"a0", "a1"}, Map: map[string]probeLeaf{"k0": {Name: "m0"}},
		Recurse: &planProbe{Recurse: &planProbe{Named: "deep", Inline: probeLeaf{Name: "deep"}}, Inline: probeLeaf{Name: "deep"}},
		Self:    []planProbe{{Named: "self"}}, Inline: probeLeaf{Name: "inline"}, Numbers: map[int]string{1: "one"}, Bytes: []byte("b"),
	}
}

// TestInternPlanHandlesInterfaces: an interface field, which JSON cannot
// decode, is interned by the reflective walk from the plan.
func TestInternPlanHandlesInterfaces(t *testing.T) {
	table := newShareTable(false)
	mk := func() *planProbe {
		return &planProbe{Iface: probeLeaf{Name: strings.Clone("iface-value")}, Recurse: &planProbe{Iface: probeLeaf{Name: strings.Clone("iface-value")}}}
	}
	interner{table}.internObject(mk())
	p := mk()
	interner{table}.internObject(p)
	if got := internedStrings(table, reflect.ValueOf(p)); !got[".Iface.Name"] || !got[".Recurse.Iface.Name"] {
		t.Errorf("interface fields not interned: %v", got)
	}
}

func BenchmarkIntern(b *testing.B) {
	spec := dataset.Spec{Name: "standard", Namespace: "ns"}
	var bodies [][]byte
	for i := range 64 {
		data, err := json.Marshal(dataset.NewPod(spec, i, shareNow))
		if err != nil {
			b.Fatal(err)
		}
		bodies = append(bodies, data)
	}
	for _, bc := range []struct {
		name   string
		intern func(*shareTable, any)
	}{
		{"plan", func(t *shareTable, o any) { interner{t}.internObject(o) }},
		{"walk", func(t *shareTable, o any) { walkObject(t, o, nil, false) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			table := newShareTable(false)
			const batch = 256
			pods := make([]*corev1.Pod, batch)
			decode := func(from int) {
				for j := range pods {
					pods[j] = &corev1.Pod{}
					if err := json.Unmarshal(bodies[(from+j)%len(bodies)], pods[j]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%batch == 0 {
					b.StopTimer()
					decode(i)
					b.StartTimer()
				}
				bc.intern(table, pods[i%batch])
			}
		})
	}
}

// TestApplyTakenLeavesTakenFieldsAlone: interning a Pod whose spec was taken
// from the held version visits its metadata and status but not its spec,
// whose strings the held version's interning made canonical already.
func TestApplyTakenLeavesTakenFieldsAlone(t *testing.T) {
	p := NewPipeline(Config{Intern: true})
	fresh := func(s string) string { return strings.Clone(s) }
	pod := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: fresh("ns"), Labels: map[string]string{fresh("app"): fresh("shop")}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: fresh("app"), Image: fresh("img:1")}}},
			Status:     corev1.PodStatus{Phase: corev1.PodPhase(fresh("Running"))},
		}
	}
	gr := schema.GroupResource{Resource: "pods"}
	first := pod()
	for range 2 { // a string is canonical from its second sighting on
		if _, err := p.Apply(pod(), gr); err != nil {
			t.Fatal(err)
		}
	}
	spec := Fields(1) << reflect.TypeFor[corev1.Pod]().Field(2).Index[0]
	if reflect.TypeFor[corev1.Pod]().Field(2).Name != "Spec" {
		t.Fatal("corev1.Pod's field 2 is not its spec")
	}
	next := pod()
	image, ns, phase := unsafe.StringData(next.Spec.Containers[0].Image), unsafe.StringData(next.Namespace), unsafe.StringData(string(next.Status.Phase))
	if _, err := p.ApplyTaken(next, first, gr, spec); err != nil {
		t.Fatal(err)
	}
	if unsafe.StringData(next.Spec.Containers[0].Image) != image {
		t.Error("the taken spec was interned again")
	}
	if unsafe.StringData(next.Namespace) == ns || unsafe.StringData(string(next.Status.Phase)) == phase {
		t.Error("the metadata and status beside the taken spec were not interned")
	}
	whole := planOf(reflect.TypeFor[corev1.Pod]())
	if got := planSkipping(reflect.TypeFor[corev1.Pod](), spec); len(got.ops) >= len(whole.ops) || len(got.ops) == 0 {
		t.Errorf("the plan without the spec has %d ops, the whole plan %d", len(got.ops), len(whole.ops))
	}
}
