package encstore

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/objmeta"
)

// Packed is an object encoded and compressed as its Store keeps it, on its
// way to the store: a list's objects, packed as they are decoded, wait in an
// informer's queue at the size they will have in the store instead of
// decoded, and the store keeps these very bytes (UpsertPacked). Without it an
// informer holds every object of its first list decoded at once, many times
// the store's own size.
//
// A Packed has the object's namespace, name, uid and resourceVersion as its
// object metadata (objmeta.Identity), so that key functions and the
// informer's queue read it as they read the object, without allocating;
// everything else is in its bytes, which only the store that packed it reads
// (Unpack).
type Packed struct {
	objmeta.Identity

	key string
	e   entry
	// by is the store that packed it: only it can read the bytes.
	by *Store
}

var _ runtime.Object = (*Packed)(nil)

func (p *Packed) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the Packed; the bytes are never changed, so they are
// shared.
func (p *Packed) DeepCopyObject() runtime.Object { c := *p; return &c }

// Pack encodes and compresses obj as the store would keep it, without
// storing it. Its bytes are compressed with the store's dictionary once it
// exists; the first objects, on which the dictionary is trained, are packed
// plain and compressed when they are stored. An object whose version (key
// and non-empty resourceVersion) the store holds is not encoded: the pack
// shares the stored bytes, which are never changed.
func (s *Store) Pack(obj runtime.Object) (*Packed, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, fmt.Errorf("encstore: pack %T: %w", obj, err)
	}
	packed := &Packed{Identity: objmeta.Identity{Namespace: m.GetNamespace(), Name: m.GetName(), UID: string(m.GetUID()), ResourceVersion: m.GetResourceVersion()}, by: s}
	if key, err := s.keyFunc(obj); err == nil {
		if e, held := s.held(key, packed.ResourceVersion); held {
			packed.key, packed.e = key, entry{data: e.data, rv: e.rv}
			return packed, nil
		}
	}
	p, err := s.prepare(obj, nil)
	if err != nil {
		return nil, err
	}
	s.afterStore(p.train)
	packed.key, packed.e = p.key, p.e
	return packed, nil
}

// KeepPacked reports whether the store holds the packed object's version
// (its key at its non-empty resourceVersion), as Upsert finds it before it
// keeps the bytes it has: then the store records that resourceVersion, as
// Upsert does, and there is nothing to decode or store.
func (s *Store) KeepPacked(packed any) bool {
	p, ok := packed.(*Packed)
	if !ok || p.by != s {
		return false
	}
	_, same := s.keptSame(p.key, p.e.rv)
	return same
}

// IsPacked reports whether obj is an object this store packed.
func (s *Store) IsPacked(obj any) bool {
	p, ok := obj.(*Packed)
	return ok && p.by == s
}

// Unpack decodes an object the store packed: a new object, owned by the
// caller.
func (s *Store) Unpack(obj any) (runtime.Object, error) {
	p, ok := obj.(*Packed)
	if !ok || p.by != s {
		return nil, fmt.Errorf("encstore: unpack %T: not packed by this store", obj)
	}
	return s.decode(p.key, p.e)
}

// UpsertPacked is Upsert of a packed object whose decoded form is obj (from
// Unpack, and unchanged since): the store keeps the packed bytes without
// encoding obj, and computes obj's index values.
func (s *Store) UpsertPacked(packed, obj any) (existed bool, oldRV string, old func() (any, error), err error) {
	p, ok := packed.(*Packed)
	if !ok || p.by != s {
		return false, "", nil, fmt.Errorf("encstore: upsert %T: not packed by this store", packed)
	}
	ro, ok := obj.(runtime.Object)
	if !ok {
		return false, "", nil, fmt.Errorf("encstore: cannot keep %s: %T is not a runtime.Object", p.key, obj)
	}
	return s.putPrepared(obj, prepared{key: p.key, obj: ro, e: entry{data: p.e.data, rv: p.e.rv}}, true)
}

// metaOf is obj's object metadata.
func metaOf(obj runtime.Object) (metav1.Object, error) {
	if m, ok := obj.(metav1.Object); ok {
		return m, nil
	}
	if a, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if m := a.GetObjectMeta(); m != nil {
			return m, nil
		}
	}
	return nil, cache.KeyError{Obj: obj, Err: fmt.Errorf("%T has no object metadata", obj)}
}
