package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/cachetune/cachetune/pkg/failure"
)

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

var podsGR = schema.GroupResource{Resource: "pods"}

func testPod(name, rv string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: rv,
			Labels:      map[string]string{"app": "shop"},
			Annotations: map[string]string{lastApplied: `{"big":"json"}`, "keep": "me", "tool.example.com/x": "y"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "a", Operation: metav1.ManagedFieldsOperationApply,
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{}}`)}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:1"}}},
	}
}

func encodePod(t *testing.T, p *corev1.Pod) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(p, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// testCaller keeps every object, finds cached ones by namespace/name and
// finishes nothing: what a test sees is the decoder's own work.
type testCaller struct {
	cached map[string]runtime.Object
}

func (testCaller) Skip(namespace, name []byte) bool { return false }

func (c testCaller) Cached(id Identity) (runtime.Object, bool) {
	o, ok := c.cached[string(id.Namespace)+"/"+string(id.Name)]
	if !ok {
		return nil, false
	}
	m, err := meta.Accessor(o)
	if err != nil || string(m.GetUID()) != string(id.UID) || m.GetResourceVersion() != string(id.ResourceVersion) {
		return nil, false
	}
	return o, true
}

func (testCaller) Finish(obj runtime.Object, _ uint64) (runtime.Object, error) { return obj, nil }

func newPod() runtime.Object { return &corev1.Pod{} }

// stripDecoded strips a decoded object as s says, the way a transform does:
// the decoder must drop the same fields from the encoded bytes.
func stripDecoded(t testing.TB, obj runtime.Object, s Strip) {
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	if s.ManagedFields {
		m.SetManagedFields(nil)
	}
	kept := map[string]string{}
	for k, v := range m.GetAnnotations() {
		drop := s.Annotations[k]
		for _, p := range s.AnnotationPrefixes {
			drop = drop || strings.HasPrefix(k, p)
		}
		if !drop {
			kept[k] = v
		}
	}
	if len(kept) == 0 {
		kept = nil
	}
	m.SetAnnotations(kept)
}

func TestDecoderStripsLikeTheTransform(t *testing.T) {
	s := Strip{ManagedFields: true, Annotations: map[string]bool{lastApplied: true}, AnnotationPrefixes: []string{"tool.example.com/"}}
	d := NewDecoder(newPod, podsGR, s, testCaller{})
	_, msg, err := Unwrap(encodePod(t, testPod("a", "7")))
	if err != nil {
		t.Fatal(err)
	}
	got, reused, err := d.Object(msg)
	if err != nil || reused {
		t.Fatalf("object: %v, reused %v", err, reused)
	}
	want := testPod("a", "7")
	want.TypeMeta = metav1.TypeMeta{} // typed clients clear TypeMeta too
	stripDecoded(t, want, s)
	if !equality.Semantic.DeepEqual(want, got) {
		t.Fatalf("decoded object differs from the transformed one (-want +got):\n%s", cmp.Diff(want, got))
	}
	if got.(*corev1.Pod).Annotations["keep"] != "me" {
		t.Fatal("an annotation that is not stripped is gone")
	}
}

func TestDecoderReusesUnchangedObjects(t *testing.T) {
	cached := testPod("a", "7")
	d := NewDecoder(newPod, podsGR, Strip{ManagedFields: true}, testCaller{cached: map[string]runtime.Object{"ns/a": cached}})
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
			_, msg, err := Unwrap(encodePod(t, tc.pod))
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
	if d.Reused() != 1 {
		t.Errorf("Reused() = %d, want 1", d.Reused())
	}
}

func TestDecoderRejectsCorruptInput(t *testing.T) {
	d := NewDecoder(newPod, podsGR, Strip{ManagedFields: true}, testCaller{})
	good := encodePod(t, testPod("a", "7"))
	for name, data := range map[string][]byte{
		"no magic":        []byte(`{"kind":"Pod"}`),
		"truncated":       good[:len(good)/2],
		"garbage varint":  append(append([]byte{}, protoMagic...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
		"length overflow": append(append([]byte{}, protoMagic...), 0x12, 0xff, 0x01),
	} {
		t.Run(name, func(t *testing.T) {
			_, msg, err := Unwrap(data)
			if err == nil {
				_, _, err = d.Object(msg)
			}
			if err == nil {
				t.Fatal("corrupt input decoded without an error")
			}
		})
	}
}

// listed collects the items List hands over.
type listed struct {
	items  []runtime.Object
	reused int
}

func (l *listed) item(obj runtime.Object, reused bool) {
	l.items = append(l.items, obj)
	if reused {
		l.reused++
	}
}

func TestDecodeListStatus(t *testing.T) {
	var buf bytes.Buffer
	st := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old"}
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(st, &buf); err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(newPod, podsGR, Strip{}, testCaller{})
	var l listed
	_, _, err := d.List(bytes.NewReader(buf.Bytes()), l.item)
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("List of a 410 Status = %v, want an expired error", err)
	}
}

func TestDecodeListStream(t *testing.T) {
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: "99", Continue: "next"}}
	for _, name := range []string{"a", "b", "c"} {
		list.Items = append(list.Items, *testPod(name, "7"))
	}
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(list, &buf); err != nil {
		t.Fatal(err)
	}
	cached := testPod("b", "7")
	d := NewDecoder(newPod, podsGR, Strip{ManagedFields: true}, testCaller{cached: map[string]runtime.Object{"ns/b": cached}})
	var res listed
	rv, cont, err := d.List(bytes.NewReader(buf.Bytes()), res.item)
	if err != nil {
		t.Fatal(err)
	}
	if cont != "next" || rv != "99" || len(res.items) != 3 || res.reused != 1 || res.items[1] != runtime.Object(cached) {
		t.Fatalf("got rv %q continue %q, %d items, %d reused (b cached: %v)", rv, cont, len(res.items), res.reused, res.items[1] == runtime.Object(cached))
	}
	if res.items[0].(*corev1.Pod).ManagedFields != nil {
		t.Fatal("item not stripped")
	}
	// Every truncation of the page is an error or, when only the envelope's
	// trailing fields (content encoding and type, empty) are cut, the whole
	// list: never a silently short list, also for a cut at an item boundary or
	// right after the envelope's header.
	for cut := 0; cut < buf.Len(); cut++ {
		var got listed
		rv, _, err := d.List(bytes.NewReader(buf.Bytes()[:cut]), got.item)
		if err == nil && (len(got.items) != 3 || rv != "99") {
			t.Fatalf("a page cut at %d of %d bytes decoded as %d items at %q without an error", cut, buf.Len(), len(got.items), rv)
		}
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "truncated") && !strings.Contains(err.Error(), "ended before") {
			t.Errorf("a page cut at %d bytes: %v, want an error that says the body is cut", cut, err)
		}
		if err != nil && failure.Classify(err).Reason != failure.Decode {
			t.Errorf("a page cut at %d bytes: %v classified %v, want Decode", cut, err, failure.Classify(err))
		}
	}
}
