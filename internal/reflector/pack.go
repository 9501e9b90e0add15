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
// inside the watch sends a stand-in of the informer's type for each changed
// one (Handed.StandIn), since the reflector accepts only objects of that
// type in a watch, and the informer resolves it to the pack.
type Packer interface {
	Pack(obj runtime.Object) (runtime.Object, error)
	IsPacked(obj any) bool
}

// PackListed makes the informer's lists pack their objects with p. Call it
// before the informer runs.
func (lw *ListWatch) PackListed(p Packer) { lw.c.pack = p }

// Unpacked is called by the informer after it decodes a packed object: while
// the list that packed it is being taken in, it paces the collector from the
// decoding goroutine (Pacer.HandOverTick).
func (lw *ListWatch) Unpacked() {
	if p := lw.lister.handOver.Load(); p != nil {
		p.HandOverTick()
	}
}

// Indexed is called by the informer's index functions (leanstore wraps
// them) for each decoded object its indexer takes in: while a first list is
// being taken in, it paces the collector from the goroutine that stores the
// list's objects (Pacer.IndexTick). Outside a guarded hand-over it costs two
// atomic loads.
func (lw *ListWatch) Indexed() {
	if p := lw.lister.handOver.Load(); p != nil {
		p.IndexTick()
	}
}

// Delivered is called by the informer's event handlers (leanstore wraps
// them) for each add of a first list that client-go delivers to them: while
// that list is being taken in, it paces the collector from the handler's
// goroutine (Pacer.DeliveryTick). Outside a guarded hand-over it costs two
// atomic loads.
func (lw *ListWatch) Delivered() {
	if p := lw.lister.handOver.Load(); p != nil {
		p.DeliveryTick()
	}
}

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

// packs reports whether obj is an object the informer's store packed.
func (c *conn) packs(obj runtime.Object) bool { return c.pack != nil && c.pack.IsPacked(obj) }
