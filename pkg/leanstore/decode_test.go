package leanstore

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/cachetune/cachetune/pkg/failure"
)

var podsGR = schema.GroupResource{Resource: "pods"}

func testPod(name, rv string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: rv,
			Labels:      map[string]string{"app": "shop"},
			Annotations: map[string]string{LastAppliedAnnotation: `{"big":"json"}`, "keep": "me", "tool.example.com/x": "y"},
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

func TestProtoDecoderStripsLikeTheTransform(t *testing.T) {
	s := &stripper{managedFields: true, annotations: map[string]bool{LastAppliedAnnotation: true}, annotationPrefixes: []string{"tool.example.com/"}}
	d := &protoDecoder{newObject: func() runtime.Object { return &corev1.Pod{} }, strip: s}
	_, msg, err := unwrap(encodePod(t, testPod("a", "7")))
	if err != nil {
		t.Fatal(err)
	}
	got, reused, err := d.object(msg, podsGR)
	if err != nil || reused {
		t.Fatalf("object: %v, reused %v", err, reused)
	}
	want := testPod("a", "7")
	want.TypeMeta = metav1.TypeMeta{} // typed clients clear TypeMeta too
	if _, err := s.apply(want, podsGR); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(want, got) {
		t.Fatalf("decoded object differs from the transformed one (-want +got):\n%s", cmp.Diff(want, got))
	}
}

func TestProtoDecoderReusesUnchangedObjects(t *testing.T) {
	v := newView()
	cached := testPod("a", "7")
	v.replace([]runtime.Object{cached})
	d := &protoDecoder{newObject: func() runtime.Object { return &corev1.Pod{} }, strip: &stripper{managedFields: true}, view: v}
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
			_, msg, err := unwrap(encodePod(t, tc.pod))
			if err != nil {
				t.Fatal(err)
			}
			got, reused, err := d.object(msg, podsGR)
			if err != nil {
				t.Fatal(err)
			}
			if reused != tc.wantReuse || (got == runtime.Object(cached)) != tc.wantReuse {
				t.Fatalf("reused = %v (same pointer %v), want %v", reused, got == runtime.Object(cached), tc.wantReuse)
			}
		})
	}
}

func TestProtoDecoderRejectsCorruptInput(t *testing.T) {
	d := &protoDecoder{newObject: func() runtime.Object { return &corev1.Pod{} }, strip: &stripper{managedFields: true}}
	good := encodePod(t, testPod("a", "7"))
	for name, data := range map[string][]byte{
		"no magic":        []byte(`{"kind":"Pod"}`),
		"truncated":       good[:len(good)/2],
		"garbage varint":  append(append([]byte{}, protoMagic...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
		"length overflow": append(append([]byte{}, protoMagic...), 0x12, 0xff, 0x01),
	} {
		t.Run(name, func(t *testing.T) {
			_, msg, err := unwrap(data)
			if err == nil {
				_, _, err = d.object(msg, podsGR)
			}
			if err == nil {
				t.Fatal("corrupt input decoded without an error")
			}
		})
	}
}

func TestDecodeListStatus(t *testing.T) {
	var buf bytes.Buffer
	st := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old"}
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(st, &buf); err != nil {
		t.Fatal(err)
	}
	d := &protoDecoder{newObject: func() runtime.Object { return &corev1.Pod{} }, strip: &stripper{}}
	_, _, err := d.decodeListStream(bytes.NewReader(buf.Bytes()), podsGR, newPacer(0))
	if !isExpired(err) {
		t.Fatalf("decodeListStream of a 410 Status = %v, want an expired error", err)
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
	v := newView()
	cached := testPod("b", "7")
	v.replace([]runtime.Object{cached})
	d := &protoDecoder{newObject: func() runtime.Object { return &corev1.Pod{} }, strip: &stripper{managedFields: true}, view: v}
	res, cont, err := d.decodeListStream(bytes.NewReader(buf.Bytes()), podsGR, newPacer(1.25))
	if err != nil {
		t.Fatal(err)
	}
	if cont != "next" || res.rv != "99" || len(res.items) != 3 || res.reused != 1 || res.items[1] != runtime.Object(cached) {
		t.Fatalf("got rv %q continue %q, %d items, %d reused (b cached: %v)", res.rv, cont, len(res.items), res.reused, res.items[1] == runtime.Object(cached))
	}
	if res.items[0].(*corev1.Pod).ManagedFields != nil {
		t.Fatal("item not stripped")
	}
	// Every truncation of the page is an error or, when only the envelope's
	// trailing fields (content encoding and type, empty) are cut, the whole
	// list: never a silently short list, also for a cut at an item boundary or
	// right after the envelope's header.
	for cut := 0; cut < buf.Len(); cut++ {
		got, _, err := d.decodeListStream(bytes.NewReader(buf.Bytes()[:cut]), podsGR, newPacer(0))
		if err == nil && (len(got.items) != 3 || got.rv != "99") {
			t.Fatalf("a page cut at %d of %d bytes decoded as %d items at %q without an error", cut, buf.Len(), len(got.items), got.rv)
		}
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "truncated") && !strings.Contains(err.Error(), "ended before") {
			t.Errorf("a page cut at %d bytes: %v, want an error that says the body is cut", cut, err)
		}
		if err != nil && failure.Classify(err).Reason != failure.Decode {
			t.Errorf("a page cut at %d bytes: %v classified %v, want Decode", cut, err, failure.Classify(err))
		}
	}
}
