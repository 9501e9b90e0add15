package shrink

import (
	"errors"
	"reflect"
	goruntime "runtime"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// guardedPods shares n pods of the dataset (8 apps) in a guarded table, as an
// informer's transform would.
func guardedPods(t *testing.T, n int) (*shareTable, []*corev1.Pod) {
	t.Helper()
	table := newShareTable(true)
	spec := dataset.Spec{Name: "guard", Namespace: "ns"}
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = dataset.NewPod(spec, i, shareNow)
		pods[i].ManagedFields = nil
		shareObject(table, pods[i], true)
	}
	return table, pods
}

func TestGuardReportsObjectAndPath(t *testing.T) {
	table, pods := guardedPods(t, 40)
	if all, _ := mutations(table); len(all) != 0 {
		t.Fatalf("before any change: %v", all)
	}
	// Pods 1, 9, 17, 25 and 33 belong to one app: the first keeps its own
	// values (a value is shared from its second sighting on), a later one's
	// are shared by the rest.
	if unsafe.Pointer(&pods[25].Spec.Containers[0]) != unsafe.Pointer(&pods[33].Spec.Containers[0]) {
		t.Fatal("the containers of one app's pods are not shared")
	}
	first := "ns/" + pods[firstHolder(25, func(i int) unsafe.Pointer { return reflect.ValueOf(pods[i].Labels).UnsafePointer() })].Name
	// The shared containers hold the env of the pod they came from. That env
	// is canonical (guarded at its own path) only if sharing saw it twice before
	// the containers: secondSighting's filter misses a sighting now and then
	// (about one process in a few thousand, by the hash seed), and then a change
	// in it is reported at the containers only.
	env := pods[25].Spec.Containers[0].Env
	envGuarded := table.canonicalEntry(reflect.TypeOf(env), unsafe.Pointer(unsafe.SliceData(env))) != nil
	pods[25].Labels["x"] = "y"
	pods[25].Spec.Containers[0].Env[0].Value = "changed"

	all, fresh := mutations(table)
	if len(fresh) != len(all) {
		t.Errorf("first check: %d new of %d", len(fresh), len(all))
	}
	byPath := map[string]*MutationError{}
	for _, e := range all {
		byPath[e.Path] = e
	}
	const deepest = `spec.containers[0].env`
	want := []string{`metadata.labels`, `spec.containers`}
	if envGuarded {
		want = append(want, deepest)
	} else {
		t.Logf("the env was not seen twice before its containers; its change is reported at spec.containers")
	}
	for _, want := range want {
		e := byPath[want]
		if e == nil {
			t.Errorf("no mutation reported at %s; got %v", want, all)
			continue
		}
		if want == `metadata.labels` && e.Key != first || e.Holders < 2 {
			t.Errorf("%s: key %q, %d holders; want %q and at least 2", want, e.Key, e.Holders, first)
		}
		// A shared value has several holders; the error names one of them
		// (for the labels, the one that first held them) and the path.
		if msg := e.Error(); !strings.Contains(msg, e.Key) || !strings.Contains(msg, want) || !strings.HasPrefix(e.Key, "ns/") {
			t.Errorf("error %q does not name the object and the path", msg)
		}
	}
	if envGuarded && all[0].Path != deepest {
		t.Errorf("deepest path not first: %s, want %s", all[0].Path, deepest)
	}
	// Reported once; found at every check.
	again, fresh := mutations(table)
	if len(fresh) != 0 || len(again) != len(all) {
		t.Errorf("second check: %d found, %d new; want %d and 0", len(again), len(fresh), len(all))
	}
	var me *MutationError
	if err := JoinMutations(again); !errors.As(err, &me) {
		t.Errorf("joined error %v is not a *MutationError", err)
	}
	goruntime.KeepAlive(pods)
}

// TestGuardIgnoresReadsThatCache: a Quantity caches its string form and may
// change its representation when read; neither is a change of the cached
// value. A second pass of the transform is not one either.
func TestGuardIgnoresReadsThatCache(t *testing.T) {
	table, pods := guardedPods(t, 40)
	for _, p := range pods {
		for _, v := range p.Spec.Volumes {
			if v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
				_ = v.EmptyDir.SizeLimit.String()
				_ = v.EmptyDir.SizeLimit.AsDec()
			}
		}
		shareObject(table, p, true) // client-go's second pass
	}
	q := resource.MustParse("1Gi")
	pods[20].Spec.Overhead = corev1.ResourceList{"memory": q}
	if all, _ := mutations(table); len(all) != 0 {
		t.Errorf("reads reported as changes: %v", all)
	}
	goruntime.KeepAlive(pods)
}

func TestGuardUnstructured(t *testing.T) {
	table := newShareTable(true)
	var objs []*unstructured.Unstructured
	for i := range 40 {
		p := dataset.NewPod(dataset.Spec{Name: "u", Namespace: "ns"}, i, shareNow)
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		shareObject(table, u, true)
		objs = append(objs, u)
	}
	if all, _ := mutations(table); len(all) != 0 {
		t.Fatalf("before any change: %v", all)
	}
	labelsOf := func(i int) map[string]any {
		return objs[i].Object["metadata"].(map[string]any)["labels"].(map[string]any)
	}
	// Objects 2, 10, 18, 26 and 34 belong to one app.
	first := firstHolder(34, func(i int) unsafe.Pointer { return reflect.ValueOf(labelsOf(i)).UnsafePointer() })
	if first == 34 {
		t.Fatal("the labels of one app's objects are not shared")
	}
	labelsOf(34)["x"] = "y"
	all, _ := mutations(table)
	if len(all) != 1 || all[0].Path != `["metadata"]["labels"]` || all[0].Key != "ns/"+objs[first].GetName() || all[0].Holders < 2 {
		t.Errorf("got %v, want the labels of %s, shared", all, objs[first].GetName())
	}
	goruntime.KeepAlive(objs)
}

// TestInternedStringsOutliveAGC: an equal string decoded after a garbage
// collection gets the copy cached objects already hold. The unique package,
// which interning used before, forgets a value at the first collection after
// its handle is dropped, so strings of objects decoded in different GC cycles
// stayed apart.
func TestInternedStringsOutliveAGC(t *testing.T) {
	table := newShareTable(false)
	mk := func() *corev1.Pod {
		p := &corev1.Pod{}
		p.Labels = map[string]string{"app": strings.Clone("interned-across-gcs")}
		p.Spec.NodeName = strings.Clone("node-interned-across-gcs")
		return p
	}
	a, b := mk(), mk()
	shareObject(table, a, false)
	shareObject(table, b, false) // second sighting: b's strings become canonical
	goruntime.GC()
	goruntime.GC()
	c := mk()
	shareObject(table, c, false)
	if unsafe.StringData(c.Spec.NodeName) != unsafe.StringData(b.Spec.NodeName) ||
		unsafe.StringData(c.Labels["app"]) != unsafe.StringData(b.Labels["app"]) {
		t.Error("a string decoded after a GC did not get the cached copy")
	}
	goruntime.KeepAlive(a)
	goruntime.KeepAlive(b)
}

// firstHolder returns the lowest index j (of the same app as i: j = i mod 8)
// whose value, by at(j), is the same allocation as i's: the object it was
// shared from.
func firstHolder(i int, at func(int) unsafe.Pointer) int {
	for j := i % 8; j < i; j += 8 {
		if at(j) == at(i) {
			return j
		}
	}
	return i
}
