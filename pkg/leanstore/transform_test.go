package leanstore_test

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// everyStrip is a transform with every stripping option at once, in the order a
// factory applies them.
func everyStrip() cache.TransformFunc {
	return leanstore.Transform(
		leanstore.WithStripLastApplied(),
		leanstore.WithStripAnnotations("example.com/drop"),
		leanstore.WithStripAnnotationPrefixes("scratch.example.com/"),
		// A resource prune: drop the label "pruned", whatever the Go type.
		leanstore.WithPrune(podsResource, func(obj runtime.Object) error {
			m := obj.(metav1.Object)
			if l := m.GetLabels(); l["pruned"] != "" {
				kept := map[string]string{}
				for k, v := range l {
					if k != "pruned" {
						kept[k] = v
					}
				}
				m.SetLabels(kept)
			}
			return nil
		}),
		leanstore.WithTypedPrune(func(p *corev1.Pod) error {
			for i := range p.Status.ContainerStatuses {
				p.Status.ContainerStatuses[i].ImageID = ""
			}
			return nil
		}),
		// The user's transform adds a label: idempotent, as client-go requires,
		// and writing nothing when the label is there already, because under
		// WatchList its second run sees labels that other cached objects share.
		// It sets a new map rather than writing into the one it was given.
		leanstore.WithTransform(func(obj any) (any, error) {
			m := obj.(metav1.Object)
			if m.GetLabels()["seen"] == "true" {
				return obj, nil
			}
			l := maps.Clone(m.GetLabels())
			if l == nil {
				l = map[string]string{}
			}
			l["seen"] = "true"
			m.SetLabels(l)
			return obj, nil
		}),
		leanstore.WithSharing(true),
	)
}

// decorate gives an object everything everyStrip removes, and one annotation it
// must keep.
func decorate(m metav1.Object) {
	ann := m.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[leanstore.LastAppliedAnnotation] = `{"apiVersion":"v1","kind":"Pod"}`
	ann["example.com/drop"] = "x"
	ann["scratch.example.com/a"] = "y"
	ann["example.com/keep"] = "z"
	m.SetAnnotations(ann)
	l := m.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l["pruned"] = "yes"
	m.SetLabels(l)
	m.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "cachetune-apply", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)},
		{Manager: "cachetune-status", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`), Subresource: "status"},
	})
}

// TestTransformIsIdempotent checks, for each kind of object an informer holds,
// that the composed transform strips what it is asked to, keeps the rest, and
// changes nothing when applied to its own output (client-go applies a transform
// twice under streaming lists and falls back to LIST when the second run fails).
func TestTransformIsIdempotent(t *testing.T) {
	pod := func() *corev1.Pod {
		p := dataset.NewPod(dataset.Spec{Name: "standard", Namespace: "ns"}, 3, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
		decorate(p)
		return p
	}
	unstructuredPod := func() runtime.Object {
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod())
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: raw}
		u.SetAPIVersion("v1")
		u.SetKind("Pod")
		return u
	}
	metadataPod := func() runtime.Object {
		p := pod()
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: p.ObjectMeta}
	}
	for name, newObj := range map[string]func() runtime.Object{
		"typed":        func() runtime.Object { return pod() },
		"unstructured": unstructuredPod,
		"metadata":     metadataPod,
	} {
		t.Run(name, func(t *testing.T) {
			tf := everyStrip()
			in := newObj()
			out, err := tf(in)
			if err != nil {
				t.Fatalf("first run: %v", err)
			}
			m := out.(metav1.Object)
			if m.GetManagedFields() != nil {
				t.Error("managedFields kept")
			}
			if got := m.GetAnnotations(); len(got) == 0 || got["example.com/keep"] != "z" {
				t.Errorf("annotation example.com/keep lost: %v", got)
			}
			for k := range m.GetAnnotations() {
				if k == leanstore.LastAppliedAnnotation || k == "example.com/drop" || strings.HasPrefix(k, "scratch.example.com/") {
					t.Errorf("annotation %s kept", k)
				}
			}
			if l := m.GetLabels(); l["pruned"] != "" || l["seen"] != "true" {
				t.Errorf("labels %v: want the resource prune and the user's transform applied", l)
			}
			if p, ok := out.(*corev1.Pod); ok {
				if len(p.Status.ContainerStatuses) == 0 {
					t.Fatal("the dataset's Pod has no container statuses to prune")
				}
				for _, cs := range p.Status.ContainerStatuses {
					if cs.ImageID != "" {
						t.Errorf("typed prune not applied: %s has imageID %q", cs.Name, cs.ImageID)
					}
				}
			}

			once := out.(runtime.Object).DeepCopyObject()
			again, err := tf(out)
			if err != nil {
				t.Fatalf("second run on the transform's own output: %v", err)
			}
			if !equality.Semantic.DeepEqual(once, again) {
				t.Error("the second run changed the object")
			}
		})
	}
}

// TestTransformPassesTombstones: a DeletedFinalStateUnknown reaches handlers as
// client-go made it.
func TestTransformPassesTombstones(t *testing.T) {
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: &corev1.Pod{}}
	out, err := everyStrip()(tomb)
	if err != nil || out != tomb {
		t.Fatalf("got %v, %v: want the tombstone unchanged", out, err)
	}
}

// TestTransformReportsPruneErrors: a failing prune surfaces with the object it
// failed on, wrapping the prune's error.
func TestTransformReportsPruneErrors(t *testing.T) {
	errBroken := errors.New("broken prune")
	tf := leanstore.Transform(leanstore.WithPrune(podsResource, func(runtime.Object) error { return errBroken }))
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	_, err := tf(p)
	if !errors.Is(err, errBroken) || !strings.Contains(err.Error(), "ns/p") {
		t.Fatalf("got %v: want the prune's error naming ns/p", err)
	}
	// Objects of other resources do not run the pods prune.
	if _, err := tf(&corev1.ConfigMap{}); err != nil {
		t.Fatalf("a pods prune ran on a ConfigMap: %v", err)
	}
}
