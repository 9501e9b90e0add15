package encstore_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cachetune/cachetune/internal/encstore"
)

func roundTrip(t *testing.T, c encstore.Codec, obj runtime.Object) runtime.Object {
	t.Helper()
	data, err := c.Encode([]byte("prefix"), obj)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "prefix") {
		t.Fatal("Encode did not append to dst")
	}
	out, err := c.Decode(data[len("prefix"):])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestProtobufKeepsTheBareMessageAndAnyTypeMeta(t *testing.T) {
	c := newPodCodec()
	p := storedPod(7, "")
	if diff := cmp.Diff(p, roundTrip(t, c, p)); diff != "" {
		t.Fatalf("Pod (-in +out):\n%s", diff)
	}
	// Without TypeMeta, the kept bytes are the message itself: what a
	// protobuf list carries, and what AddEncoded takes.
	data, err := c.Encode(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	if want := mustMarshal(t, p); string(data) != string(want) {
		t.Fatal("a Pod without TypeMeta is not kept as its bare message")
	}
	withKind := p.DeepCopy()
	withKind.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	if diff := cmp.Diff(withKind, roundTrip(t, c, withKind)); diff != "" {
		t.Fatalf("Pod with TypeMeta (-in +out):\n%s", diff)
	}

	meta := encstore.Protobuf(func() runtime.Object { return &metav1.PartialObjectMetadata{} })
	pom := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: p.ObjectMeta,
	}
	if diff := cmp.Diff(pom, roundTrip(t, meta, pom)); diff != "" {
		t.Fatalf("PartialObjectMetadata (-in +out):\n%s", diff)
	}
	if _, err := c.Encode(nil, &unstructured.Unstructured{}); err == nil {
		t.Fatal("the protobuf codec encoded an unstructured object")
	}
	if _, err := c.Decode([]byte{0xff, 0xff, 0xff}); err == nil {
		t.Fatal("the protobuf codec decoded garbage")
	}
}

func TestUnstructuredCodecsKeepNumberTypes(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": "w", "namespace": "ns", "resourceVersion": "12", "labels": map[string]any{"a": "b"}},
		"spec": map[string]any{
			"replicas": int64(3),
			"ratio":    0.25,
			"enabled":  true,
			"items":    []any{"x", int64(-1), map[string]any{"deep": nil}},
		},
	}}
	for _, c := range []struct {
		name  string
		codec encstore.Codec
	}{{"json", encstore.UnstructuredJSON()}, {"cbor", encstore.UnstructuredCBOR()}} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(u, roundTrip(t, c.codec, u)); diff != "" {
				t.Fatalf("(-in +out):\n%s", diff)
			}
			if _, err := c.codec.Encode(nil, &corev1.Pod{}); err == nil {
				t.Fatal("encoded a typed Pod")
			}
			if _, err := c.codec.Decode([]byte{0xff, 0x00}); err == nil {
				t.Fatal("decoded garbage")
			}
		})
	}
}

// TypedJSON keeps a typed object (here a Pod, standing for a custom
// resource's Go type) as its JSON, and gives it back equal, TypeMeta included.
func TestTypedJSONRoundTrips(t *testing.T) {
	c := encstore.TypedJSON(func() runtime.Object { return &corev1.Pod{} })
	p := storedPod(3, "")
	p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	if diff := cmp.Diff(p, roundTrip(t, c, p)); diff != "" {
		t.Fatalf("Pod (-in +out):\n%s", diff)
	}
}
