package wire

import (
	"bytes"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// The lean protobuf decoder reads Kubernetes protobuf messages itself instead of
// handing whole responses to client-go's codec:
//
//   - it peeks at an object's uid and resourceVersion without decoding it, and
//     when the cache already holds that exact version, returns the cached object:
//     an unchanged object costs no allocation at all on a re-list;
//   - it drops managedFields and stripped annotations from the encoded bytes
//     before decoding, so they are never allocated, not even briefly;
//   - it decodes each list item into its own allocation as it goes, so a list
//     response never exists as a decoded whole.
//
// Every built-in kind, and PartialObjectMetadata, keeps ObjectMeta in field 1 of
// its message; ObjectMeta's field numbers are fixed by the API's compatibility
// rules (k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto).

// protoMagic prefixes every enveloped Kubernetes protobuf object.
var protoMagic = []byte{0x6b, 0x38, 0x73, 0x00} // "k8s\x00"

// Field numbers in k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto.
const (
	objMetadataField = 1 // every kind: ObjectMeta metadata = 1

	metaName            = 1
	metaNamespace       = 3
	metaUID             = 5
	metaResourceVersion = 6
	metaAnnotations     = 12 // map<string,string>: repeated entries {1: key, 2: value}
	metaManagedFields   = 17

	listMetaField  = 1 // every list kind: ListMeta metadata = 1
	listItemsField = 2 // every list kind: repeated items = 2

	unknownTypeMeta    = 1 // runtime.Unknown
	unknownRaw         = 2
	typeMetaAPIVersion = 1
	typeMetaKind       = 2

	watchEventType   = 1 // metav1.WatchEvent
	watchEventObject = 2
	rawExtensionRaw  = 1
)

var errNotProtobuf = errors.New("not a Kubernetes protobuf message")

// Unwrap returns the kind and the message bytes of an enveloped object
// ("k8s\x00" + runtime.Unknown). The result aliases data.
func Unwrap(data []byte) (kind string, msg []byte, err error) {
	if !bytes.HasPrefix(data, protoMagic) {
		return "", nil, errNotProtobuf
	}
	err = EachField(data[len(protoMagic):], func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == unknownTypeMeta && typ == protowire.BytesType:
			return EachField(v, func(n protowire.Number, t protowire.Type, tv []byte) error {
				if n == typeMetaKind && t == protowire.BytesType {
					kind = string(tv)
				}
				return nil
			})
		case num == unknownRaw && typ == protowire.BytesType:
			msg = v
		}
		return nil
	})
	return kind, msg, err
}

// EachField calls fn for each field of a message; v is the field's value for
// length-delimited fields and its whole encoding otherwise.
func EachField(msg []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return fmt.Errorf("protobuf: %w", protowire.ParseError(n))
		}
		body := msg[n:]
		var v []byte
		if typ == protowire.BytesType {
			b, m := protowire.ConsumeBytes(body)
			if m < 0 {
				return fmt.Errorf("protobuf: %w", protowire.ParseError(m))
			}
			v, n = b, n+m
		} else {
			m := protowire.ConsumeFieldValue(num, typ, body)
			if m < 0 {
				return fmt.Errorf("protobuf: %w", protowire.ParseError(m))
			}
			v, n = body[:m], n+m
		}
		if err := fn(num, typ, v); err != nil {
			return err
		}
		msg = msg[n:]
	}
	return nil
}

// appendField re-encodes one field as EachField reported it.
func appendField(dst []byte, num protowire.Number, typ protowire.Type, v []byte) []byte {
	dst = protowire.AppendTag(dst, num, typ)
	if typ == protowire.BytesType {
		return protowire.AppendBytes(dst, v)
	}
	return append(dst, v...)
}
