package encstore

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestHotCacheRefusesAReadOfTheVersionBefore plays a reader racing with a
// writer: it took the entry of the first version, the writer stored the
// second (and dropped the key from the hot cache), then the reader's decode
// of the first version lands in the hot cache. Reads of the second version
// must not be served that object: the hot cache answers only for the bytes
// the store holds now.
func TestHotCacheRefusesAReadOfTheVersionBefore(t *testing.T) {
	s, err := NewStore(Options{Codec: Protobuf(func() runtime.Object { return &corev1.Pod{} })})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(rv, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: rv}, Spec: corev1.PodSpec{NodeName: node}}
	}
	if err := s.Add(pod("1", "first-node")); err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	before := s.items["ns/p"]
	s.mu.RUnlock()

	if err := s.Update(pod("2", "second-node")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.read("ns/p", before, true); err != nil { // the late reader remembers version 1
		t.Fatal(err)
	}
	for range 2 {
		obj, ok, err := s.GetByKey("ns/p")
		if err != nil || !ok {
			t.Fatalf("GetByKey: exists %v, err %v", ok, err)
		}
		if got := obj.(*corev1.Pod); got.ResourceVersion != "2" || got.Spec.NodeName != "second-node" {
			t.Fatalf("read %s at resourceVersion %s, want second-node at 2: the hot cache served the version before", got.Spec.NodeName, got.ResourceVersion)
		}
	}
}
