package reflector

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// Packer packs a list's objects for the informer's store as they are decoded
// (an encoded store, encstore.Packed): the list then holds each object at the
// size the store keeps it, not decoded, and so does the informer's queue,
// which unpacks each object when it applies it. A list handed to the
// reflector whole (ListWithContext) carries the packed objects; a re-list
// inside the watch unpacks each difference as it hands it over, since the
// reflector accepts only objects of the informer's type in a watch.
type Packer interface {
	Pack(obj runtime.Object) (runtime.Object, error)
	IsPacked(obj any) bool
	Unpack(obj any) (runtime.Object, error)
}

// PackListed makes the informer's lists pack their objects with p. Call it
// before the informer runs.
func (lw *ListWatch) PackListed(p Packer) { lw.c.pack = p }

// add appends a listed object to res: packed, when the informer packs and obj
// is not a handed record (an unchanged object a re-list found, which never
// reaches the reflector).
func (c *conn) add(res *listResult, obj runtime.Object, reused bool) error {
	if _, isRecord := obj.(*Record); c.pack != nil && !isRecord {
		packed, err := c.pack.Pack(obj)
		if err != nil {
			return fmt.Errorf("%s: %w", c.gr(), err)
		}
		obj = packed
	}
	res.items = append(res.items, obj)
	if reused {
		res.reused++
	}
	return nil
}

// unpacked returns the object of a re-list's difference as the reflector
// takes it: unpacked, when it was packed (a changed object; a deletion's is
// a placeholder of the informer's type, see Handed.recordGoneAt).
func (c *conn) unpacked(obj runtime.Object) (runtime.Object, error) {
	if c.pack == nil || !c.pack.IsPacked(obj) {
		return obj, nil
	}
	o, err := c.pack.Unpack(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.gr(), err)
	}
	return o, nil
}
