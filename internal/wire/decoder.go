// Package wire reads Kubernetes protobuf responses itself: the envelope, list
// pages and watch frames, one object at a time. It asks its caller, through
// Caller, which objects to skip, which are already cached and how to finish a
// decoded one, so it knows nothing of the cache it decodes for.
package wire

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
)

// Caller is what a decoder asks of the informer it decodes for.
type Caller interface {
	// Skip reports whether the object of namespace and name is not the
	// caller's (another shard's). It is asked before anything of the object is
	// decoded; the arguments alias the message.
	Skip(namespace, name []byte) bool
	// Cached returns the cached object with id's uid and resourceVersion, to
	// keep instead of decoding the message again.
	Cached(id Identity) (runtime.Object, bool)
	// Finish runs the caller's stage on a newly decoded object (the rest of
	// the stripping, the user's transform, interning) and returns what to keep.
	// taken has bit i set for each field i of the object's struct taken from
	// the held version rather than decoded (TakeUnchanged).
	Finish(obj runtime.Object, taken uint64) (runtime.Object, error)
}

// Strip names the ObjectMeta fields the decoder drops from the encoded bytes,
// so that they are never allocated.
type Strip struct {
	ManagedFields      bool
	Annotations        map[string]bool
	AnnotationPrefixes []string
}

// Decoder decodes the objects of one informer. It is used by one goroutine
// at a time: its scratch buffers are reused from object to object.
type Decoder struct {
	// newObject returns an empty object of the informer's type.
	newObject func() runtime.Object
	gr        schema.GroupResource
	strip     Strip
	caller    Caller
	// skippedRV is the resourceVersion of the object last skipped for the
	// caller; it aliases the message and is valid until the next read.
	skippedRV []byte

	// prior, when set (TakeUnchanged), gives the held versions whose
	// unchanged top-level fields new versions take; u is its scratch.
	prior Prior
	u     unchanged

	metaBuf, objBuf, itemBuf []byte
	// reused counts objects returned from the cache; taken, fields taken
	// from a held version (TakeUnchanged).
	reused, taken int

	// listType is the apiVersion and kind a list of newObject's type carries
	// in its envelope (see listTypeOf), found once.
	listType     schema.GroupVersionKind
	listTypeDone bool
}

// NewDecoder returns a decoder of gr's objects, of the type newObject returns.
func NewDecoder(newObject func() runtime.Object, gr schema.GroupResource, strip Strip, caller Caller) *Decoder {
	return &Decoder{newObject: newObject, gr: gr, strip: strip, caller: caller}
}

// TakeUnchanged makes the decoder take a new version's top-level fields that
// are encoded exactly as the held version's were from the held version, as p
// keeps them (see Prior), rather than decode them: shared with the held
// version, or, with deepCopy, copied (DeepCopyInto), so that no two versions
// share a part.
func (d *Decoder) TakeUnchanged(p Prior, deepCopy bool) { d.prior, d.u.copy = p, deepCopy }

// Taken is the number of top-level fields the decoder took from held
// versions rather than decode them (TakeUnchanged).
func (d *Decoder) Taken() int { return d.taken }

// Reused is the number of objects the decoder returned from the cache.
func (d *Decoder) Reused() int { return d.reused }

// SkippedRV is the resourceVersion of the object last skipped; it aliases the
// message and is valid until the next read.
func (d *Decoder) SkippedRV() []byte { return d.skippedRV }

// checkListType checks a list envelope's type against the list of the
// informer's type, as apimachinery's decoder does: an empty apiVersion or kind
// takes the expected one, any other is not the list asked for (a body of
// another resource, or corrupt). A type that client-go's scheme does not know
// (a user's own typed custom resource) is not checked.
func (d *Decoder) checkListType(apiVersion, kind string) error {
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

// Object decodes one object message (not enveloped): the cached object when it
// is unchanged, otherwise a new object without the stripped fields (and, under
// TakeUnchanged, with the top-level fields encoded as the held version's were
// taken from it), run through the caller's Finish. It returns a nil object,
// and no error, for an object the caller skips; reused says the object is the
// cached one.
func (d *Decoder) Object(msg []byte) (obj runtime.Object, reused bool, err error) {
	id, err := Peek(msg)
	if err != nil {
		return nil, false, err
	}
	// Sharding: an object of another shard is dropped here, from its
	// namespace and name alone, before anything of it is decoded.
	if d.caller.Skip(id.Namespace, id.Name) {
		d.skippedRV = id.ResourceVersion
		return nil, false, nil
	}
	if o, ok := d.caller.Cached(id); ok {
		d.reused++
		return o, true, nil
	}
	obj = d.newObject()
	u, ok := obj.(unmarshaler)
	if !ok {
		return nil, false, fmt.Errorf("%T cannot be decoded from protobuf", obj)
	}
	var plan *takePlan
	if d.prior != nil {
		plan = takePlanOf(obj)
	}
	if err := d.decode(u, msg, id, plan); err != nil {
		return nil, false, err
	}
	var taken uint64
	if d.u.fill(obj) {
		d.taken += len(d.u.take)
		taken = d.u.fields()
	} else { // the held version is of another type: decode it all
		obj = d.newObject()
		if err := d.decode(obj.(unmarshaler), msg, id, nil); err != nil {
			return nil, false, err
		}
	}
	obj, err = d.caller.Finish(obj, taken)
	if err != nil {
		return nil, false, err
	}
	if d.u.plan != nil {
		d.prior.Decoded(id, d.u.sums)
	}
	return obj, false, nil
}

// decode strips msg and decodes it into u, without the top-level fields to
// take from the held version when plan is set (d.u says which).
func (d *Decoder) decode(u unmarshaler, msg []byte, id Identity, plan *takePlan) error {
	d.u.plan, d.u.take = nil, d.u.take[:0]
	if plan != nil {
		d.u.begin(d.prior, plan, id)
	}
	var err error
	d.objBuf, err = d.stripEncoded(d.objBuf[:0], msg)
	if errors.Is(err, errDuplicateTopField) {
		d.u.plan, d.u.take = nil, d.u.take[:0]
		d.objBuf, err = d.stripEncoded(d.objBuf[:0], msg)
	}
	if err != nil {
		return err
	}
	if err := u.Unmarshal(d.objBuf); err != nil {
		return fmt.Errorf("decode %s %s/%s: %w", d.gr, id.Namespace, id.Name, err)
	}
	return nil
}

// stripEncoded appends msg to dst without the ObjectMeta fields the caller's
// shrink pipeline removes: managedFields and the stripped annotations.
func (d *Decoder) stripEncoded(dst, msg []byte) ([]byte, error) {
	if !d.strip.ManagedFields && len(d.strip.Annotations) == 0 && len(d.strip.AnnotationPrefixes) == 0 && d.u.plan == nil {
		return append(dst, msg...), nil
	}
	err := EachField(msg, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != objMetadataField || typ != protowire.BytesType {
			take, err := d.u.skip(num, typ, v)
			if err != nil || take {
				return err
			}
			dst = appendField(dst, num, typ, v)
			return nil
		}
		d.metaBuf = d.metaBuf[:0]
		err := EachField(v, func(n protowire.Number, t protowire.Type, mv []byte) error {
			switch {
			case n == metaManagedFields && d.strip.ManagedFields:
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
func (d *Decoder) dropAnnotation(entry []byte) bool {
	if len(d.strip.Annotations) == 0 && len(d.strip.AnnotationPrefixes) == 0 {
		return false
	}
	var key []byte
	_ = EachField(entry, func(n protowire.Number, t protowire.Type, v []byte) error {
		if n == 1 && t == protowire.BytesType {
			key = v
		}
		return nil
	})
	if d.strip.Annotations[string(key)] {
		return true
	}
	for _, p := range d.strip.AnnotationPrefixes {
		if strings.HasPrefix(string(key), p) {
			return true
		}
	}
	return false
}
