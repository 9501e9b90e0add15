package shrink

import (
	"encoding/json"
	"reflect"
	goruntime "runtime"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

var shareNow = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// lastAppliedAnnotation is kubectl's client-side apply annotation
// (leanstore.LastAppliedAnnotation).
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

func TestSharingKeepsObjectsEqual(t *testing.T) {
	spec := dataset.Spec{Name: "standard", Namespace: "ns"}
	table := newShareTable(false)
	var shared []*corev1.Pod
	for i := range 40 {
		p := dataset.NewPod(spec, i, shareNow)
		want := p.DeepCopy()
		shareObject(table, p, true)
		if !equality.Semantic.DeepEqual(want, p) {
			t.Fatalf("pod %d changed when shared", i)
		}
		shared = append(shared, p)
	}
	// Pods 8 and 16 belong to the same app (8 apps): their containers are equal
	// and must now be one backing array (pod 0, the first seen, keeps its own:
	// values enter the table at their second sighting); pods of different apps
	// must not share.
	a, b, c := shared[8], shared[16], shared[9]
	// The table's first-sighting filter is a cache: a sighting can be evicted
	// by another value, which delays sharing to a later sighting. Of the four
	// later Pods of one app, most must hold one backing array.
	same := map[*corev1.Container]int{}
	for _, i := range []int{8, 16, 24, 32} {
		same[&shared[i].Spec.Containers[0]]++
	}
	most := 0
	for _, n := range same {
		most = max(most, n)
	}
	if most < 3 {
		t.Errorf("equal containers of pods of one app are not shared: %d distinct arrays among 4 pods", len(same))
	}
	if &a.Spec.Containers[0] == &c.Spec.Containers[0] {
		t.Error("different containers are shared")
	}
	if &a.Status.ContainerStatuses[0] == &b.Status.ContainerStatuses[0] {
		t.Error("container statuses, which differ per pod, are shared")
	}
	if a.Name == b.Name || a.UID == b.UID {
		t.Error("names or uids merged")
	}
}

func TestSharingUnstructured(t *testing.T) {
	mk := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Thing",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"app": "x"}},
			"spec":     map[string]any{"parts": []any{map[string]any{"n": int64(1)}, "s"}, "size": int64(3)},
		}}
	}
	x, y := mk("x"), mk("y")
	wantX, wantY := x.DeepCopy(), y.DeepCopy()
	table := newShareTable(false)
	shareObject(table, x, true)
	shareObject(table, y, true)
	if !equality.Semantic.DeepEqual(wantX, x) || !equality.Semantic.DeepEqual(wantY, y) {
		t.Fatal("unstructured objects changed when shared")
	}
	if x.GetName() != "x" || y.GetName() != "y" {
		t.Fatal("names merged")
	}
}

func TestSharingIsSafeConcurrently(t *testing.T) {
	spec := dataset.Spec{Name: "standard", Namespace: "ns"}
	table := newShareTable(false)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				p := dataset.NewPod(spec, g*50+i, shareNow)
				want := p.DeepCopy()
				shareObject(table, p, true)
				if !equality.Semantic.DeepEqual(want, p) {
					t.Errorf("pod changed when shared concurrently")
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestSharedValuesAreFreed checks that the table does not keep values alive: once
// no object holds a shared value, the garbage collector frees it and the table
// forgets it.
func TestSharedValuesAreFreed(t *testing.T) {
	spec := dataset.Spec{Name: "freed", Namespace: "gone"}
	table := newShareTable(false)
	objs := []runtime.Object{}
	for i := range 16 {
		p := dataset.NewPod(spec, i, shareNow)
		shareObject(table, p, true)
		objs = append(objs, p)
	}
	countLive := func() int {
		table.mu.Lock()
		defer table.mu.Unlock()
		n := 0
		for _, es := range table.values {
			for _, e := range es {
				if e.p.Value() != nil {
					n++
				}
			}
		}
		for _, e := range table.strs {
			if e.p.Value() != nil {
				n++
			}
		}
		return n
	}
	held := countLive()
	goruntime.KeepAlive(objs) // held until counted
	goruntime.GC()
	goruntime.GC()
	if after := countLive(); held == 0 || after >= held {
		t.Errorf("live shared values: %d while objects were held, %d after they were dropped; want some, then fewer", held, after)
	}
}

// TestEqualValuesAgreesWithDeepEqual: the comparison sharing uses to adopt a
// canonical part agrees with reflect.DeepEqual on the parts of Pods, equal and
// different, shared and not.
func TestEqualValuesAgreesWithDeepEqual(t *testing.T) {
	spec := dataset.Spec{Name: "standard", Namespace: "ns"}
	distinct := dataset.Spec{Name: "d", Namespace: "ns", PodShape: dataset.PodsDistinct}
	var pods []*corev1.Pod
	for i := range 12 {
		pods = append(pods, dataset.NewPod(spec, i, shareNow), dataset.NewPod(distinct, i, shareNow))
	}
	table := newShareTable(false)
	for _, p := range pods[:8] {
		shareObject(table, p, true) // some parts now shared, at one address
	}
	full := &corev1.Pod{}
	fill(reflect.ValueOf(full).Elem(), "", 5)
	pods = append(pods, full, full.DeepCopy())
	pods[len(pods)-1].Spec.Containers[1].Env[0].Value = "changed"
	pods[len(pods)-1].Labels["k.ObjectMeta.Labels-0"] = "changed"
	n := 0
	for _, a := range pods {
		for _, b := range pods {
			for _, part := range []func(*corev1.Pod) any{
				func(p *corev1.Pod) any { return p },
				func(p *corev1.Pod) any { return p.Spec.Containers },
				func(p *corev1.Pod) any { return p.Labels },
				func(p *corev1.Pod) any { return p.Spec.Volumes },
				func(p *corev1.Pod) any { return p.Status.ContainerStatuses },
				func(p *corev1.Pod) any { return p.Spec.Containers[0].Resources },
			} {
				x, y := part(a), part(b)
				want := reflect.DeepEqual(x, y)
				if got := equalValues(reflect.ValueOf(x), reflect.ValueOf(y)); got != want {
					t.Fatalf("equalValues(%T) = %v, DeepEqual %v", x, got, want)
				}
				if want {
					n++
				}
			}
		}
	}
	if n <= len(pods)*6 {
		t.Errorf("only %d equal pairs beyond each part with itself: the test compares too few equal parts", n-len(pods)*6)
	}
}

// BenchmarkShareWalk shares Pods of the standard dataset, decoded from JSON
// with managedFields and last-applied stripped, into one table: the walk of
// WithSharing, per Pod. new: Pods of a list (each walked alone, as an ADDED
// or a listed one); modified: the next version of each (a status patch that
// also changes an annotation, as the events phase of cachebench writes),
// walked after the version the cache holds (ApplyAfter), and walked alone
// (no previous version, as sharing did before it had one).
func BenchmarkShareWalk(b *testing.B) {
	spec := dataset.Spec{Name: "standard", Namespace: "ns"}
	var bodies, nexts [][]byte
	for i := range 64 {
		p, data := listedPod(b, spec, i)
		bodies = append(bodies, data)
		p.Annotations["cachetune.dev/stamp"] = strconv.Itoa(i)
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "Ready", Status: "True", LastTransitionTime: metav1.NewTime(shareNow.Add(time.Duration(i) * time.Second))})
		data, err := json.Marshal(p)
		if err != nil {
			b.Fatal(err)
		}
		nexts = append(nexts, data)
	}
	decode := func(body []byte) *corev1.Pod { return decodePod(b, body) }
	for _, c := range []struct {
		name           string
		modified, prev bool
	}{{"new", false, false}, {"modified/after-cached", true, true}, {"modified/alone", true, false}} {
		b.Run(c.name, func(b *testing.B) {
			table := newShareTable(false)
			cached := make([]any, len(bodies))
			for j := range bodies {
				p := decode(bodies[j])
				shareObject(table, p, true)
				cached[j] = p
			}
			const batch = 256
			pods := make([]*corev1.Pod, batch)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%batch == 0 {
					b.StopTimer()
					for j := range pods {
						if c.modified {
							pods[j] = decode(nexts[(i+j)%len(nexts)])
						} else {
							pods[j] = decode(bodies[(i+j)%len(bodies)])
						}
					}
					b.StartTimer()
				}
				var prev any
				if c.prev {
					prev = cached[i%len(cached)]
				}
				walkObject(table, pods[i%batch], prev, true)
			}
		})
	}
}

// BenchmarkShareList shares the 10,000 Pods of a list of the standard
// dataset, each different and decoded from JSON as BenchmarkShareWalk's are,
// into a fresh table, as a first list does: per op, the whole list (divide by
// 10,000 for a Pod). BenchmarkShareWalk walks 64 Pods again and again into a
// table that holds them all already; here the table grows with the list, as
// it does in an informer's sync.
func BenchmarkShareList(b *testing.B) {
	spec := dataset.Spec{Name: "standard", Namespace: "ns"}
	bodies := make([][]byte, 10000)
	for i := range bodies {
		_, bodies[i] = listedPod(b, spec, i)
	}
	pods := make([]*corev1.Pod, len(bodies))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j := range pods {
			pods[j] = decodePod(b, bodies[j])
		}
		table := newShareTable(false)
		b.StartTimer()
		for _, p := range pods {
			walkObject(table, p, nil, true)
		}
	}
}

// listedPod is the dataset's Pod i with managedFields and last-applied
// stripped, as a lean informer lists it, and its JSON.
func listedPod(b testing.TB, spec dataset.Spec, i int) (*corev1.Pod, []byte) {
	p := dataset.NewPod(spec, i, shareNow)
	p.ManagedFields = nil
	delete(p.Annotations, lastAppliedAnnotation)
	data, err := json.Marshal(p)
	if err != nil {
		b.Fatal(err)
	}
	return p, data
}

// decodePod decodes a Pod from JSON: every part of it an allocation of its
// own, as a decoded Pod's are.
func decodePod(b testing.TB, body []byte) *corev1.Pod {
	p := &corev1.Pod{}
	if err := json.Unmarshal(body, p); err != nil {
		b.Fatal(err)
	}
	return p
}

// TestWalkAfterTakesThePreviousVersionsEqualParts walks new versions of
// shared Pods after the version the cache holds (ApplyAfter): each new
// version keeps its content, the cached version is not written, and the new
// one holds the cached one's parts where they are equal (canonical ones and
// its own) and its own where they differ.
func TestWalkAfterTakesThePreviousVersionsEqualParts(t *testing.T) {
	spec := dataset.Spec{Name: "standard", Namespace: "ns"}
	table := newShareTable(false)
	var cached, originals []*corev1.Pod
	for i := range 24 {
		p := dataset.NewPod(spec, i, shareNow)
		originals = append(originals, p.DeepCopy())
		shareObject(table, p, true)
		cached = append(cached, p)
	}
	changes := []struct {
		name   string
		change func(*corev1.Pod)
		// same says which parts must be the cached version's, different
		// which must not.
		same, different []func(*corev1.Pod) unsafe.Pointer
	}{
		{"unchanged", func(*corev1.Pod) {},
			[]func(*corev1.Pod) unsafe.Pointer{containersOf, labelsOf, podIPsOf, volumesOf}, nil},
		{"status", func(p *corev1.Pod) { p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: "fd00::1"}) },
			[]func(*corev1.Pod) unsafe.Pointer{containersOf, labelsOf, volumesOf}, []func(*corev1.Pod) unsafe.Pointer{podIPsOf}},
		{"image", func(p *corev1.Pod) { p.Spec.Containers[0].Image += "-next" },
			[]func(*corev1.Pod) unsafe.Pointer{labelsOf, podIPsOf, volumesOf}, []func(*corev1.Pod) unsafe.Pointer{containersOf}},
		{"phase", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }, // as long as Running
			[]func(*corev1.Pod) unsafe.Pointer{containersOf, labelsOf, podIPsOf, volumesOf}, nil},
		{"label", func(p *corev1.Pod) { p.Labels["app"] += "-next" },
			[]func(*corev1.Pod) unsafe.Pointer{containersOf, podIPsOf, volumesOf}, []func(*corev1.Pod) unsafe.Pointer{labelsOf}},
		{"env value", func(p *corev1.Pod) { p.Spec.Containers[0].Env[0].Value += "-next" },
			[]func(*corev1.Pod) unsafe.Pointer{labelsOf, podIPsOf, volumesOf}, []func(*corev1.Pod) unsafe.Pointer{containersOf}},
	}
	for _, c := range changes {
		for i, prev := range cached[8:] {
			i += 8
			before := prev.DeepCopy()
			next := originals[i].DeepCopy() // as decoded: every part its own
			c.change(next)
			want := next.DeepCopy()
			walkObject(table, next, prev, true)
			if !equality.Semantic.DeepEqual(want, next) {
				t.Fatalf("%s, pod %d: the new version changed when walked after the cached one", c.name, i)
			}
			if !equality.Semantic.DeepEqual(before, prev) {
				t.Fatalf("%s, pod %d: the cached version was written", c.name, i)
			}
			for j, part := range c.same {
				// The cached version's own part (one sharing saw first in
				// it) gives way to an equal canonical one, which the walk
				// adopts first: when secondSighting's filter missed the
				// cached version's sighting (by the hash seed, a run in
				// about a thousand), a later Pod's value became canonical.
				adopted := isCanonical(table, part(next)) && !isCanonical(table, part(prev))
				if part(next) != part(prev) && !adopted {
					t.Errorf("%s, pod %d: part %d is neither the cached version's nor canonical", c.name, i, j)
				}
			}
			for j, part := range c.different {
				if part(next) == part(prev) {
					t.Errorf("%s, pod %d: part %d, which changed, is the cached version's", c.name, i, j)
				}
			}
		}
	}
	// A part unique to one Pod (its IPs) is taken from the cached version,
	// not made canonical as a second sighting of its value.
	for _, p := range cached[8:] {
		if table.canonicalEntry(reflect.TypeFor[[]corev1.PodIP](), podIPsOf(p)) != nil {
			t.Fatalf("pod %s: its IPs became canonical", p.Name)
		}
	}
}

// isCanonical reports whether p is the allocation of a canonical value of
// table, of any type.
func isCanonical(table *shareTable, p unsafe.Pointer) bool {
	for k := range table.canonical {
		if k.p == uintptr(p) && table.canonical[k].p.Value() != nil {
			return true
		}
	}
	return false
}

func containersOf(p *corev1.Pod) unsafe.Pointer {
	return unsafe.Pointer(unsafe.SliceData(p.Spec.Containers))
}
func volumesOf(p *corev1.Pod) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(p.Spec.Volumes)) }
func podIPsOf(p *corev1.Pod) unsafe.Pointer  { return unsafe.Pointer(unsafe.SliceData(p.Status.PodIPs)) }
func labelsOf(p *corev1.Pod) unsafe.Pointer  { return reflect.ValueOf(p.Labels).UnsafePointer() }

// TestWalkAfterUnstructured is the same for unstructured content: equal
// nested maps and lists are the cached version's, changed ones the new one's.
func TestWalkAfterUnstructured(t *testing.T) {
	mk := func(name, size string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Thing",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"app": "x", "own": name}},
			"spec":     map[string]any{"parts": []any{map[string]any{"n": int64(1)}, "s"}, "size": size},
			"status":   map[string]any{"seen": []any{name}},
		}}
	}
	table := newShareTable(false)
	prev := mk("a", "big")
	shareObject(table, mk("b", "big"), true)
	shareObject(table, prev, true)
	before := prev.DeepCopy()
	next := mk("a", "small")
	want := next.DeepCopy()
	walkObject(table, next, prev, true)
	if !equality.Semantic.DeepEqual(want, next) || !equality.Semantic.DeepEqual(before, prev) {
		t.Fatal("walking after the cached version changed either")
	}
	part := func(u *unstructured.Unstructured, path ...string) unsafe.Pointer {
		v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
		return reflect.ValueOf(v).UnsafePointer()
	}
	for _, p := range [][]string{{"metadata", "labels"}, {"spec", "parts"}, {"status", "seen"}} {
		if part(next, p...) != part(prev, p...) {
			t.Errorf("%v: not the cached version's", p)
		}
	}
	if part(next, "spec") == part(prev, "spec") {
		t.Error("spec, which changed, is the cached version's")
	}
}

// TestNestedMapsStoreTheirOwnEntries walks maps whose values hold maps, each
// with keys that interning replaces: the walk of each map stores its own
// entries again, through the table's scratch shared by the walks of the
// maps nested in it, and no other.
func TestNestedMapsStoreTheirOwnEntries(t *testing.T) {
	fresh := func(s string) string { return string([]byte(s)) } // a copy of its own
	mk := func(name string) *unstructured.Unstructured {
		inner := func(i int) map[string]any {
			return map[string]any{fresh("inner-a"): fresh("value-" + strconv.Itoa(i)), fresh("inner-b"): int64(i)}
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Thing",
			"metadata": map[string]any{"name": name, "labels": map[string]any{fresh("app"): fresh("x")}},
			"spec": map[string]any{
				fresh("outer-1"): inner(1),
				fresh("outer-2"): map[string]any{fresh("middle"): inner(2), fresh("leaf"): fresh("text")},
				fresh("outer-3"): inner(3),
			},
		}}
	}
	table := newShareTable(false)
	// A string enters the table at its second sighting: x's are seen, y's
	// become the canonical copies, z's are replaced by them.
	x, y, z := mk("x"), mk("y"), mk("z")
	shareObject(table, x, true)
	shareObject(table, y, true)
	wantZ := z.DeepCopy()
	shareObject(table, z, true)
	if !equality.Semantic.DeepEqual(wantZ, z) {
		t.Fatalf("nested maps changed when shared:\nwant %v\ngot  %v", wantZ.Object["spec"], z.Object["spec"])
	}
	// z's keys, at every level, are the canonical copies y's walk interned.
	canon := map[string]unsafe.Pointer{}
	var keys func(m map[string]any, record bool) int
	keys = func(m map[string]any, record bool) int {
		n := 0
		for k, v := range m {
			if record {
				canon[k] = unsafe.Pointer(unsafe.StringData(k))
			} else if p, ok := canon[k]; ok && p != unsafe.Pointer(unsafe.StringData(k)) {
				t.Errorf("key %q of z is not the interned copy", k)
			}
			n++
			if sub, ok := v.(map[string]any); ok {
				n += keys(sub, record)
			}
		}
		return n
	}
	keys(y.Object["spec"].(map[string]any), true)
	if n := keys(z.Object["spec"].(map[string]any), false); n != 11 {
		t.Errorf("z's spec has %d keys, want 11", n)
	}
	for i, w := range table.writes[:cap(table.writes)] {
		if w != (entryWrite{}) {
			t.Fatalf("the table's scratch still holds entry %d (%q) after the walks", i, w.k)
		}
	}
}
