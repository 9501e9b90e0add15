package objmeta

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

func TestOf(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	u := &unstructured.Unstructured{}
	u.SetNamespace("ns")
	u.SetName("u")
	var nilPod *corev1.Pod
	var nilTombstone *cache.DeletedFinalStateUnknown
	cases := []struct {
		name string
		obj  any
		want string // namespace/name, "" for no object
	}{
		{"typed", pod, "ns/p"},
		{"unstructured", u, "ns/u"},
		{"partial", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}}, "ns/m"},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}, "ns/p"},
		{"tombstone pointer", &cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}, "ns/p"},
		{"tombstone without object", cache.DeletedFinalStateUnknown{Key: "ns/p"}, ""},
		{"nil tombstone pointer", nilTombstone, ""},
		{"nil pointer", nilPod, ""},
		{"nil", nil, ""},
		{"no metadata", "a string", ""},
	}
	for _, c := range cases {
		m, ok := Of(c.obj)
		got := ""
		if ok {
			got = m.GetNamespace() + "/" + m.GetName()
		}
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%s: Of = %q, %v; want %q", c.name, got, ok, c.want)
		}
	}
}
