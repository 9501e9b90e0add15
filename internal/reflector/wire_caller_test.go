package reflector

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/cachetune/cachetune/internal/shrink"
	"github.com/cachetune/cachetune/internal/wire"
)

func encodePod(t *testing.T, p *corev1.Pod) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(p, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func newPod() runtime.Object { return &corev1.Pod{} }

// The decoder with the loop's caller drops from the bytes what the pipeline
// drops from a decoded object, and finishes with the pipeline: the object is the
// one the transform makes.
func TestWireDecoderStripsLikeTheTransform(t *testing.T) {
	s := shrink.NewPipeline(shrink.Config{ManagedFields: true, Annotations: map[string]bool{"kubectl.kubernetes.io/last-applied-configuration": true}, AnnotationPrefixes: []string{"tool.example.com/"}})
	d := newWireDecoder(newPod, podsGR, nil, s, nil)
	_, msg, err := wire.Unwrap(encodePod(t, testPod("a", "7")))
	if err != nil {
		t.Fatal(err)
	}
	got, reused, err := d.Object(msg)
	if err != nil || reused {
		t.Fatalf("object: %v, reused %v", err, reused)
	}
	want := testPod("a", "7")
	want.TypeMeta = metav1.TypeMeta{} // typed clients clear TypeMeta too
	if _, err := s.Apply(want, podsGR); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(want, got) {
		t.Fatalf("decoded object differs from the transformed one (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// The decoder with the loop's caller returns the handed object (the handed set's)
// when its uid and resourceVersion are the ones on the wire.
func TestWireDecoderReusesUnchangedObjects(t *testing.T) {
	v := NewHanded()
	cached := testPod("a", "7")
	v.Replace([]runtime.Object{cached})
	d := newWireDecoder(newPod, podsGR, v, shrink.NewPipeline(shrink.Config{ManagedFields: true}), nil)
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		wantReuse bool
	}{
		{"same uid and resourceVersion", testPod("a", "7"), true},
		{"new resourceVersion", testPod("a", "8"), false},
		{"recreated with a new uid", func() *corev1.Pod { p := testPod("a", "7"); p.UID = "other"; return p }(), false},
		{"another object", testPod("b", "7"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, msg, err := wire.Unwrap(encodePod(t, tc.pod))
			if err != nil {
				t.Fatal(err)
			}
			got, reused, err := d.Object(msg)
			if err != nil {
				t.Fatal(err)
			}
			if reused != tc.wantReuse || (got == runtime.Object(cached)) != tc.wantReuse {
				t.Fatalf("reused = %v (same pointer %v), want %v", reused, got == runtime.Object(cached), tc.wantReuse)
			}
		})
	}
}
