package encstore

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Codec turns the objects of one informer into bytes and back. The store calls
// Encode once per object it is given, and Decode on every read that its hot
// cache does not serve.
//
// A Codec must be safe for concurrent use, and Decode must return an object
// that does not alias data: the store reuses its decompression buffers.
type Codec interface {
	// Encode appends the encoding of obj to dst and returns the extended slice.
	Encode(dst []byte, obj runtime.Object) ([]byte, error)
	// Decode returns a new object decoded from data.
	Decode(data []byte) (runtime.Object, error)
}

// protoMessage is what every generated Kubernetes type implements (gogo
// protobuf), PartialObjectMetadata included.
type protoMessage interface {
	runtime.Object
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
	Unmarshal([]byte) error
}

// protoMagic prefixes an enveloped Kubernetes protobuf object, as the API
// server sends it ("k8s\x00" + runtime.Unknown).
var protoMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// Protobuf returns the codec for typed objects and PartialObjectMetadata:
// Kubernetes' own protobuf encoding. newObject returns an empty object of the
// informer's type (&corev1.Pod{}).
//
// An object is kept as its bare message, exactly the bytes of one item of a
// protobuf list once the API server's envelope is taken off, so that a caller
// holding those bytes can hand them to the store (Store.AddEncoded). The
// message has no TypeMeta: an object that carries one (a metadata-only
// informer's PartialObjectMetadata does) is kept in the API server's envelope
// instead, which records its apiVersion and kind, and decodes with them.
func Protobuf(newObject func() runtime.Object) Codec {
	return protobufCodec{newObject: newObject}
}

type protobufCodec struct {
	newObject func() runtime.Object
}

func (c protobufCodec) Encode(dst []byte, obj runtime.Object) ([]byte, error) {
	m, ok := obj.(protoMessage)
	if !ok {
		return dst, fmt.Errorf("%T has no protobuf encoding", obj)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		return appendMessage(dst, m)
	}
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	size := m.Size()
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: make([]byte, size)}
	if _, err := m.MarshalToSizedBuffer(u.Raw); err != nil {
		return dst, fmt.Errorf("encode %T: %w", obj, err)
	}
	dst = append(dst, protoMagic...)
	return appendMessage(dst, &u)
}

// sizedMarshaler is the part of protoMessage that runtime.Unknown has too.
type sizedMarshaler interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

func appendMessage(dst []byte, m sizedMarshaler) ([]byte, error) {
	n := m.Size()
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	if _, err := m.MarshalToSizedBuffer(dst[start:]); err != nil {
		return dst[:start], fmt.Errorf("encode %T: %w", m, err)
	}
	return dst, nil
}

func (c protobufCodec) Decode(data []byte) (runtime.Object, error) {
	obj := c.newObject()
	m, ok := obj.(protoMessage)
	if !ok {
		return nil, fmt.Errorf("%T has no protobuf encoding", obj)
	}
	if !bytes.HasPrefix(data, protoMagic) {
		// A bare message: no generated type starts with this tag (field 13
		// as a group, which the Kubernetes API never uses).
		if err := m.Unmarshal(data); err != nil {
			return nil, fmt.Errorf("decode %T: %w", obj, err)
		}
		return obj, nil
	}
	var u runtime.Unknown
	if err := u.Unmarshal(data[len(protoMagic):]); err != nil {
		return nil, fmt.Errorf("decode the envelope of %T: %w", obj, err)
	}
	if err := m.Unmarshal(u.Raw); err != nil {
		return nil, fmt.Errorf("decode %T: %w", obj, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(u.APIVersion, u.Kind))
	return obj, nil
}
