package encstore

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
)

// UnstructuredJSON returns the codec for a dynamic informer's objects
// (*unstructured.Unstructured) as JSON, the encoding the dynamic client reads.
func UnstructuredJSON() Codec { return unstructuredJSON{} }

type unstructuredJSON struct{}

func (unstructuredJSON) Encode(dst []byte, obj runtime.Object) ([]byte, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return dst, fmt.Errorf("%T is not *unstructured.Unstructured", obj)
	}
	b, err := u.MarshalJSON()
	if err != nil {
		return dst, fmt.Errorf("encode %s %s/%s as JSON: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return append(dst, b...), nil
}

func (unstructuredJSON) Decode(data []byte) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("decode an unstructured object from JSON: %w", err)
	}
	return u, nil
}

// UnstructuredCBOR returns the codec for a dynamic informer's objects
// (*unstructured.Unstructured) as CBOR, with apimachinery's CBOR modes: smaller
// than JSON, and decoded with the same number types (int64, float64) as the
// JSON an unstructured object comes from.
func UnstructuredCBOR() Codec { return unstructuredCBOR{} }

type unstructuredCBOR struct{}

func (unstructuredCBOR) Encode(dst []byte, obj runtime.Object) ([]byte, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return dst, fmt.Errorf("%T is not *unstructured.Unstructured", obj)
	}
	b, err := direct.Marshal(u.Object)
	if err != nil {
		return dst, fmt.Errorf("encode %s %s/%s as CBOR: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return append(dst, b...), nil
}

func (unstructuredCBOR) Decode(data []byte) (runtime.Object, error) {
	var m map[string]any
	if err := direct.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decode an unstructured object from CBOR: %w", err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}
