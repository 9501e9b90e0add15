package reflector

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// The copy of a deleted object carries the list's resourceVersion, leaves the
// cached object as it was, and shares the rest rather than copying it.
func TestDeletedAtLeavesTheCachedObjectAlone(t *testing.T) {
	pod := testPod("a", "7")
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "a", "namespace": "ns", "resourceVersion": "7"},
		"data":     map[string]any{"k": "v"},
	}}
	pom := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "7"}}
	for _, obj := range []runtime.Object{pod, u, pom} {
		before := obj.DeepCopyObject()
		got := deletedAt(obj, "99")
		if m, _ := meta.Accessor(got); m.GetResourceVersion() != "99" {
			t.Errorf("%T: deleted at %q, want the list's 99", obj, m.GetResourceVersion())
		}
		if !equality.Semantic.DeepEqual(before, obj) {
			t.Errorf("%T: the cached object changed", obj)
		}
		m, _ := meta.Accessor(got)
		m.SetResourceVersion("7")
		if !equality.Semantic.DeepEqual(before, got) {
			t.Errorf("%T: the copy differs from the object beyond its resourceVersion", obj)
		}
	}
	// Shared, not copied: the spec's containers are the cached ones, and the
	// copy is one allocation.
	c := deletedAt(pod, "99").(*corev1.Pod)
	if &c.Spec.Containers[0] != &pod.Spec.Containers[0] {
		t.Error("the copy of a deleted Pod copied its spec")
	}
	if n := testing.AllocsPerRun(100, func() { _ = deletedAt(pod, "99") }); n > 1 {
		t.Errorf("deletedAt of a Pod allocates %.0f times, want 1", n)
	}
}
