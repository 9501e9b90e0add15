package leanstore

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
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

// protoDecoder decodes the objects of one informer. It is used by one goroutine
// at a time: its scratch buffers are reused from object to object.
type protoDecoder struct {
	// newObject returns an empty object of the informer's type.
	newObject func() runtime.Object
	// view holds the objects handed to the reflector, where unchanged ones
	// are found; nil decodes every object.
	view  *view
	strip *stripper
	// shard drops objects of other shards right after peek (WithShard); nil
	// keeps every object.
	shard *shardFilter
	// skippedRV is the resourceVersion of the object object last dropped for
	// its shard; it aliases the message and is valid until the next read.
	skippedRV []byte

	metaBuf, objBuf, itemBuf []byte
	// reused counts objects returned from the cache.
	reused int

	// listType is the apiVersion and kind a list of newObject's type carries
	// in its envelope (see listTypeOf), found once.
	listType     schema.GroupVersionKind
	listTypeDone bool
}

// checkListType checks a list envelope's type against the list of the
// informer's type, as apimachinery's decoder does: an empty apiVersion or kind
// takes the expected one, any other is not the list asked for (a body of
// another resource, or corrupt). A type that client-go's scheme does not know
// (a user's own typed custom resource) is not checked.
func (d *protoDecoder) checkListType(apiVersion, kind string) error {
	if !d.listTypeDone {
		d.listType, d.listTypeDone = listTypeOf(d.newObject()), true
	}
	want := d.listType
	if want.Kind == "" {
		return nil
	}
	if kind != "" && kind != want.Kind {
		return fmt.Errorf("the body is a %s, not a %s", kind, want.Kind)
	}
	if apiVersion != "" && apiVersion != want.GroupVersion().String() {
		return fmt.Errorf("the body is of %s, not of %s", apiVersion, want.GroupVersion())
	}
	return nil
}

// listTypeOf returns the apiVersion and kind of the list of obj's type: for
// metadata-only informers meta.k8s.io/v1 PartialObjectMetadataList, for
// typed ones what client-go's scheme registers; empty when it registers none.
func listTypeOf(obj runtime.Object) schema.GroupVersionKind {
	if _, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return metav1.SchemeGroupVersion.WithKind("PartialObjectMetadataList")
	}
	gvks, _, err := clientscheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) != 1 {
		return schema.GroupVersionKind{}
	}
	return gvks[0].GroupVersion().WithKind(gvks[0].Kind + "List")
}

// unmarshaler is implemented by every generated Kubernetes type.
type unmarshaler interface{ Unmarshal([]byte) error }

// unwrap returns the kind and the message bytes of an enveloped object
// ("k8s\x00" + runtime.Unknown). The result aliases data.
func unwrap(data []byte) (kind string, msg []byte, err error) {
	if !bytes.HasPrefix(data, protoMagic) {
		return "", nil, errNotProtobuf
	}
	err = eachField(data[len(protoMagic):], func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == unknownTypeMeta && typ == protowire.BytesType:
			return eachField(v, func(n protowire.Number, t protowire.Type, tv []byte) error {
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

// eachField calls fn for each field of a message; v is the field's value for
// length-delimited fields and its whole encoding otherwise.
func eachField(msg []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) error) error {
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

// identity is what peek reads of an object: enough to find it in the cache.
type identity struct {
	name, namespace, uid, rv []byte
}

func peek(msg []byte) (id identity, err error) {
	err = eachField(msg, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != objMetadataField || typ != protowire.BytesType {
			return nil
		}
		return eachField(v, func(n protowire.Number, t protowire.Type, mv []byte) error {
			if t != protowire.BytesType {
				return nil
			}
			switch n {
			case metaName:
				id.name = mv
			case metaNamespace:
				id.namespace = mv
			case metaUID:
				id.uid = mv
			case metaResourceVersion:
				id.rv = mv
			}
			return nil
		})
	})
	return id, err
}

// cached returns the handed object with id's uid and resourceVersion, if any.
func (d *protoDecoder) cached(id identity) (runtime.Object, bool) {
	if d.view == nil || len(id.uid) == 0 || len(id.rv) == 0 {
		return nil, false
	}
	old, ok := d.view.getBytes(id.namespace, id.name)
	if !ok {
		return nil, false
	}
	m, ok := old.(interface {
		GetUID() types.UID
		GetResourceVersion() string
	})
	if !ok || string(m.GetUID()) != string(id.uid) || m.GetResourceVersion() != string(id.rv) {
		return nil, false
	}
	return old, true
}

// object decodes one object message (not enveloped): the cached object when it
// is unchanged, otherwise a new object without the stripped fields, run through
// the rest of the stripping (prunes, the user's transform, interning). It
// returns a nil object, and no error, for an object of another shard.
func (d *protoDecoder) object(msg []byte, gr schema.GroupResource) (runtime.Object, bool, error) {
	id, err := peek(msg)
	if err != nil {
		return nil, false, err
	}
	// Sharding (shard.go): an object of another shard is dropped here, from
	// its namespace and name alone, before anything of it is decoded.
	if !d.shard.ownsBytes(id.namespace, id.name) {
		d.skippedRV = id.rv
		return nil, false, nil
	}
	if o, ok := d.cached(id); ok {
		d.reused++
		return o, true, nil
	}
	d.objBuf, err = d.stripEncoded(d.objBuf[:0], msg)
	if err != nil {
		return nil, false, err
	}
	obj := d.newObject()
	u, ok := obj.(unmarshaler)
	if !ok {
		return nil, false, fmt.Errorf("%T cannot be decoded from protobuf", obj)
	}
	if err := u.Unmarshal(d.objBuf); err != nil {
		return nil, false, fmt.Errorf("decode %s %s/%s: %w", gr, id.namespace, id.name, err)
	}
	out, err := d.strip.apply(obj, gr)
	if err != nil {
		return nil, false, err
	}
	o, ok := out.(runtime.Object)
	if !ok {
		return nil, false, fmt.Errorf("%s: transform returned %T, not a runtime.Object", gr, out)
	}
	return o, false, nil
}

// stripEncoded appends msg to dst without the ObjectMeta fields the stripper
// removes: managedFields and the stripped annotations.
func (d *protoDecoder) stripEncoded(dst, msg []byte) ([]byte, error) {
	if !d.strip.managedFields && len(d.strip.annotations) == 0 && len(d.strip.annotationPrefixes) == 0 {
		return append(dst, msg...), nil
	}
	err := eachField(msg, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != objMetadataField || typ != protowire.BytesType {
			dst = appendField(dst, num, typ, v)
			return nil
		}
		d.metaBuf = d.metaBuf[:0]
		err := eachField(v, func(n protowire.Number, t protowire.Type, mv []byte) error {
			switch {
			case n == metaManagedFields && d.strip.managedFields:
				return nil
			case n == metaAnnotations && t == protowire.BytesType && d.dropAnnotation(mv):
				return nil
			}
			d.metaBuf = appendField(d.metaBuf, n, t, mv)
			return nil
		})
		if err != nil {
			return err
		}
		dst = appendField(dst, num, typ, d.metaBuf)
		return nil
	})
	return dst, err
}

// dropAnnotation reports whether an annotations map entry is to be stripped.
func (d *protoDecoder) dropAnnotation(entry []byte) bool {
	if len(d.strip.annotations) == 0 && len(d.strip.annotationPrefixes) == 0 {
		return false
	}
	var key []byte
	_ = eachField(entry, func(n protowire.Number, t protowire.Type, v []byte) error {
		if n == 1 && t == protowire.BytesType {
			key = v
		}
		return nil
	})
	if d.strip.annotations[string(key)] {
		return true
	}
	for _, p := range d.strip.annotationPrefixes {
		if strings.HasPrefix(string(key), p) {
			return true
		}
	}
	return false
}

// appendField re-encodes one field as eachField reported it.
func appendField(dst []byte, num protowire.Number, typ protowire.Type, v []byte) []byte {
	dst = protowire.AppendTag(dst, num, typ)
	if typ == protowire.BytesType {
		return protowire.AppendBytes(dst, v)
	}
	return append(dst, v...)
}
