package diagnose

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func pod(rv string, gen int64, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: rv, Generation: gen,
			Labels: map[string]string{"app": "a"}},
		Spec:   corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func partial(p *corev1.Pod) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: p.ObjectMeta}
}

func TestClassify(t *testing.T) {
	base := pod("1", 1, nil)
	tests := []struct {
		name     string
		new      *corev1.Pod
		typed    Class // typed and unstructured agree
		metaOnly Class // what a metadata-only informer sees
	}{
		{"spec with generation", pod("2", 2, func(p *corev1.Pod) { p.Spec.NodeName = "n2" }), ClassSpec, ClassSpec},
		{"spec without generation", pod("2", 1, func(p *corev1.Pod) { p.Spec.NodeName = "n2" }), ClassSpec, ClassUnknownBody},
		{"status", pod("2", 1, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), ClassStatus, ClassUnknownBody},
		{"label", pod("2", 1, func(p *corev1.Pod) { p.Labels["x"] = "y" }), ClassMetadata, ClassMetadata},
		{"annotation", pod("2", 1, func(p *corev1.Pod) { p.Annotations = map[string]string{"a": "b"} }), ClassMetadata, ClassMetadata},
		{"finalizer", pod("2", 1, func(p *corev1.Pod) { p.Finalizers = []string{"f"} }), ClassMetadata, ClassMetadata},
		{"owner", pod("2", 1, func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Name: "rs", UID: "u"}} }), ClassMetadata, ClassMetadata},
		{"status and label", pod("2", 1, func(p *corev1.Pod) { p.Labels["x"] = "y"; p.Status.Phase = corev1.PodFailed }), ClassStatusAndMetadata, ClassMetadata},
		{"managed fields only", pod("2", 1, func(p *corev1.Pod) {
			p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate}}
		}), ClassResourceVersion, ClassUnknownBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]Class{}
			c, ok := classify(base, tt.new, base, tt.new)
			got["typed"] = c.class
			uo, un := toUnstructured(t, base), toUnstructured(t, tt.new)
			c2, ok2 := classify(uo, un, uo, un)
			got["unstructured"] = c2.class
			po, pn := partial(base), partial(tt.new)
			c3, ok3 := classify(po, pn, po, pn)
			got["partial"] = c3.class
			if !ok || !ok2 || !ok3 {
				t.Fatal("an update was taken for a resync")
			}
			want := map[string]Class{"typed": tt.typed, "unstructured": tt.typed, "partial": tt.metaOnly}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("classes (-want +got):\n%s", diff)
			}
			if c.fingerprint != c2.fingerprint && tt.typed != ClassSpec && tt.typed != ClassResourceVersion {
				t.Errorf("typed and unstructured fingerprints differ: %x, %x", c.fingerprint, c2.fingerprint)
			}
		})
	}
	if _, ok := classify(base, base, base, base); ok {
		t.Error("a resync (same resourceVersion) was classified as an update")
	}
}

// ConfigMaps have no generation and no status: a data change is a spec change.
func TestClassifyWithoutGeneration(t *testing.T) {
	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "1"}, Data: map[string]string{"k": "1"}}
	b := a.DeepCopy()
	b.ResourceVersion, b.Data["k"] = "2", "2"
	if c, _ := classify(a, b, a, b); c.class != ClassSpec {
		t.Errorf("data change classified %v, want spec", c.class)
	}
}

// Status writes with new content fingerprint differently; the same status
// written twice fingerprints the same.
func TestFingerprint(t *testing.T) {
	base := pod("1", 1, nil)
	at := func(rv string, ts time.Time) *corev1.Pod {
		return pod(rv, 1, func(p *corev1.Pod) { p.Status.StartTime = &metav1.Time{Time: ts} })
	}
	t0 := time.Unix(1700000000, 0)
	a, _ := classify(base, at("2", t0), base, at("2", t0))
	b, _ := classify(base, at("3", t0.Add(time.Second)), base, at("3", t0.Add(time.Second)))
	c, _ := classify(base, at("4", t0), base, at("4", t0))
	if a.fingerprint == b.fingerprint || a.fingerprint != c.fingerprint {
		t.Errorf("fingerprints %x %x %x: want the first and last equal, the middle different", a.fingerprint, b.fingerprint, c.fingerprint)
	}
}
