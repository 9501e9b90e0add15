package shrink

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// TestSiblingsTakeOnlyCanonicalParts walks the Pods of a list, each decoded
// from JSON (every part its own allocation), as a first list hands them over:
// without a previous version, so that each is walked beside a sibling of its
// ReplicaSet. Some Pods differ from their siblings in parts the siblings
// hold canonical (a label, an env value, an image). Each Pod must keep its
// content; no two Pods may hold one part that is not canonical (a sibling's
// own parts are its own); Pods of one app must share their containers, as
// they do without siblings; and a second walk of every Pod, as client-go's
// second pass over a listed object, must keep all that and write nothing
// into a Pod walked after its app's parts became canonical (the first Pods
// of an app, whose own parts the later ones made canonical, take the
// canonical ones then, with or without siblings).
func TestSiblingsTakeOnlyCanonicalParts(t *testing.T) {
	spec := dataset.Spec{Name: "standard", Namespace: "ns"}
	const n = 64
	changes := map[int]func(*corev1.Pod){
		17: func(p *corev1.Pod) { p.Labels["team"] += "-moved" },
		26: func(p *corev1.Pod) { p.Spec.Containers[0].Env[0].Value += "-next" },
		35: func(p *corev1.Pod) { p.Spec.Containers[1].Image += "-next" },
		44: func(p *corev1.Pod) { p.Spec.Volumes = p.Spec.Volumes[:len(p.Spec.Volumes)-1] },
		53: func(p *corev1.Pod) { p.OwnerReferences[0].Name += "-renamed" },
	}
	bodies := make([][]byte, n)
	originals := make([]*corev1.Pod, n)
	for i := range n {
		p, data := listedPod(t, spec, i)
		if change := changes[i]; change != nil {
			change(p)
			var err error
			if data, err = json.Marshal(p); err != nil {
				t.Fatal(err)
			}
		}
		bodies[i], originals[i] = data, decodePod(t, data)
	}
	table := newShareTable(false)
	pods := make([]*corev1.Pod, n)
	for i := range n {
		pods[i] = decodePod(t, bodies[i])
		walkObject(table, pods[i], nil, true)
	}
	if walkSiblings && len(table.siblings) == 0 {
		t.Fatal("no sibling kept: the Pods were walked alone")
	}
	for i := range n {
		if !equality.Semantic.DeepEqual(originals[i], pods[i]) {
			t.Fatalf("pod %d (%s) changed when walked beside its siblings", i, pods[i].Name)
		}
	}

	// No part outside a canonical value is held by two Pods.
	checkOwn(t, table, pods)

	// Pods of one app (8 apps) share their containers: of the later Pods of
	// each app, most hold one backing array (the first-sighting filter may
	// delay sharing by a Pod, as TestSharingKeepsObjectsEqual allows).
	for app := range 8 {
		arrays := map[unsafe.Pointer]int{}
		for i := app + 16; i < n; i += 8 {
			if changes[i] == nil {
				arrays[containersOf(pods[i])]++
			}
		}
		most := 0
		for _, c := range arrays {
			most = max(most, c)
		}
		if most < 4 {
			t.Errorf("app %d: the containers of its later Pods are in %d arrays", app, len(arrays))
		}
	}
	if containersOf(pods[26]) == containersOf(pods[18]) || containersOf(pods[35]) == containersOf(pods[27]) {
		t.Error("a Pod whose containers differ from its sibling's holds the sibling's")
	}

	// A second walk of each Pod.
	before := make([][]uintptr, n)
	for i, p := range pods {
		before[i] = pointersOf(reflect.ValueOf(p).Elem(), nil)
	}
	for i := range n {
		walkObject(table, pods[i], nil, true)
	}
	for i, p := range pods {
		if !equality.Semantic.DeepEqual(originals[i], p) {
			t.Fatalf("pod %d (%s) changed in its second walk", i, p.Name)
		}
		if i >= 16 && !reflect.DeepEqual(before[i], pointersOf(reflect.ValueOf(p).Elem(), nil)) {
			t.Fatalf("pod %d: the second walk wrote into it", i)
		}
	}
	checkOwn(t, table, pods)
}

// checkOwn fails t when two Pods hold one part that is not canonical.
func checkOwn(t *testing.T, table *shareTable, pods []*corev1.Pod) {
	t.Helper()
	owner := map[uintptr]int{}
	for i, p := range pods {
		for ptr := range ownParts(table, reflect.ValueOf(p).Elem()) {
			if j, ok := owner[ptr]; ok && j != i {
				t.Fatalf("pods %d and %d hold one part that is not canonical", j, i)
			}
			owner[ptr] = i
		}
	}
}

// ownParts returns the allocations of the slices, maps and pointers of v that
// are not canonical values of table nor inside one.
func ownParts(table *shareTable, v reflect.Value) map[uintptr]bool {
	out := map[uintptr]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice:
			if v.IsNil() || (v.Kind() != reflect.Pointer && v.Len() == 0) {
				return
			}
			p := v.UnsafePointer()
			if table.canonicalEntry(v.Type(), p) != nil {
				return
			}
			out[uintptr(p)] = true
			switch v.Kind() {
			case reflect.Pointer:
				walk(v.Elem())
			case reflect.Slice:
				for i := range v.Len() {
					walk(v.Index(i))
				}
			case reflect.Map:
				for it := v.MapRange(); it.Next(); {
					walk(it.Value())
				}
			}
		case reflect.Struct:
			if v.Type() == timeType {
				return // its *Location is the zone's, shared by every time in it
			}
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		}
	}
	walk(v)
	return out
}

// pointersOf appends to out the address of every string's bytes and every
// slice's, map's and pointer's allocation in v, in a fixed order (map
// entries by key): what a write into v changes.
func pointersOf(v reflect.Value, out []uintptr) []uintptr {
	switch v.Kind() {
	case reflect.String:
		out = append(out, uintptr(unsafe.Pointer(unsafe.StringData(v.String()))))
	case reflect.Pointer:
		out = append(out, uintptr(v.UnsafePointer()))
		if !v.IsNil() {
			out = pointersOf(v.Elem(), out)
		}
	case reflect.Slice:
		out = append(out, uintptr(v.UnsafePointer()))
		for i := range v.Len() {
			out = pointersOf(v.Index(i), out)
		}
	case reflect.Map:
		out = append(out, uintptr(v.UnsafePointer()))
		keys := v.MapKeys()
		if v.Type().Key().Kind() == reflect.String {
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		}
		for _, k := range keys {
			out = pointersOf(k, out)
			out = pointersOf(v.MapIndex(k), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			out = pointersOf(v.Field(i), out)
		}
	case reflect.Interface:
		if !v.IsNil() {
			out = pointersOf(v.Elem(), out)
		}
	}
	return out
}
