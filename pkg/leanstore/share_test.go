package leanstore

import (
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

var shareNow = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func TestSharingKeepsObjectsEqual(t *testing.T) {
	spec := dataset.Spec{Name: "standard", Namespace: "ns"}
	table := newShareTable(false)
	var shared []*corev1.Pod
	for i := range 40 {
		p := dataset.NewPod(spec, i, shareNow)
		want := p.DeepCopy()
		table.shareObject(p, true)
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
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "Thing",
			"metadata": map[string]interface{}{"name": name, "labels": map[string]interface{}{"app": "x"}},
			"spec":     map[string]interface{}{"parts": []interface{}{map[string]interface{}{"n": int64(1)}, "s"}, "size": int64(3)},
		}}
	}
	x, y := mk("x"), mk("y")
	wantX, wantY := x.DeepCopy(), y.DeepCopy()
	table := newShareTable(false)
	table.shareObject(x, true)
	table.shareObject(y, true)
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
				table.shareObject(p, true)
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
	objs := []kruntime.Object{}
	for i := range 16 {
		p := dataset.NewPod(spec, i, shareNow)
		table.shareObject(p, true)
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
	runtime.KeepAlive(objs) // held until counted
	runtime.GC()
	runtime.GC()
	if after := countLive(); held == 0 || after >= held {
		t.Errorf("live shared values: %d while objects were held, %d after they were dropped; want some, then fewer", held, after)
	}
}
