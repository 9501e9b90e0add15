package reflector

import (
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cachetune/cachetune/internal/shrink"
	"github.com/cachetune/cachetune/internal/wire"
)

// errAnsweredJSON is a server answering JSON to a request for protobuf.
var errAnsweredJSON = wire.ErrAnsweredJSON

// wireCaller is what the lean protobuf decoder (internal/wire) asks of an
// informer's lists and watches: its shard, its handed objects and its shrink
// pipeline.
type wireCaller struct {
	// handed holds the objects handed to the reflector, where unchanged ones
	// are found; nil decodes every object.
	handed *Handed
	strip  *shrink.Pipeline
	// shard drops objects of other shards right after the decoder peeks at
	// them (WithShard).
	shard Shard
	gr    schema.GroupResource
}

// newWireDecoder returns a lean protobuf decoder of gr's objects that finds
// unchanged ones in v, strips with s and keeps f's shard.
func newWireDecoder(newObject func() runtime.Object, gr schema.GroupResource, v *Handed, s *shrink.Pipeline, f Shard) *wire.Decoder {
	if f == nil {
		f = everyShard{}
	}
	strip := wire.Strip{ManagedFields: s.ManagedFields, Annotations: s.Annotations, AnnotationPrefixes: s.AnnotationPrefixes}
	c := &wireCaller{handed: v, strip: s, shard: f, gr: gr}
	d := wire.NewDecoder(newObject, gr, strip, c)
	if takesUnchanged(v, s, gr) {
		d.TakeUnchanged(c, !s.Share)
	}
	return d
}

// takesUnchanged reports whether a new version of an object may take the
// top-level fields encoded as the handed version's were from the handed
// version (wire.Prior): shared where sharing lets two versions share
// unchanged parts already, deep-copied otherwise; and only where nothing but
// interning or sharing runs after the decoding of a field that could make
// the handed version's differ from what the new bytes would give. A user's
// transform or a prune may read one field to change another; the mutation
// guard watches canonical parts only; an encoded store's handed set keeps
// records, not objects.
func takesUnchanged(v *Handed, s *shrink.Pipeline, gr schema.GroupResource) bool {
	return v != nil && !v.Compact && !s.Guard && s.Transform == nil &&
		len(s.Prunes[gr]) == 0 && len(s.TypedPrunes) == 0
}

// Prior returns the handed object of id's key and the digests its fields
// were decoded with, when they are its own (wire.Prior).
func (c *wireCaller) Prior(id wire.Identity) (runtime.Object, wire.FieldSums, bool) {
	return c.handed.prior(id)
}

// Decoded keeps the digests of a newly decoded object (wire.Prior).
func (c *wireCaller) Decoded(id wire.Identity, sums wire.FieldSums) {
	c.handed.keepSums(id, sums)
}

// Skip drops an object of another shard from its namespace and name alone
// (Shard.OwnsBytes), before anything of it is decoded.
func (c *wireCaller) Skip(namespace, name []byte) bool {
	return !c.shard.OwnsBytes(namespace, name)
}

// Cached returns the handed object with id's uid and resourceVersion, if any.
func (c *wireCaller) Cached(id wire.Identity) (runtime.Object, bool) {
	if c.handed == nil || len(id.UID) == 0 || len(id.ResourceVersion) == 0 {
		return nil, false
	}
	old, ok := c.handed.GetBytes(id.Namespace, id.Name)
	if !ok {
		return nil, false
	}
	m, ok := old.(interface {
		GetUID() types.UID
		GetResourceVersion() string
	})
	if !ok || string(m.GetUID()) != string(id.UID) || m.GetResourceVersion() != string(id.ResourceVersion) {
		return nil, false
	}
	return old, true
}

// Finish runs the rest of the stripping on a decoded object: prunes, the
// user's transform, interning and sharing.
func (c *wireCaller) Finish(obj runtime.Object, taken uint64) (runtime.Object, error) {
	return shrinkTaken(c.strip, c.handed, obj, c.gr, shrink.Fields(taken))
}

// decodeList decodes one protobuf list page with d into a listResult for c,
// counting the items of other shards and pacing the collector as items
// arrive.
func decodeList(c *conn, d *wire.Decoder, body io.Reader, pace *Pacer) (res listResult, cont string, err error) {
	var addErr error
	res.rv, cont, err = d.List(body, func(obj runtime.Object, reused bool) {
		if obj == nil { // another shard's (WithShard)
			c.shard.SkippedListed()
			return
		}
		if addErr == nil {
			addErr = c.add(&res, obj, reused)
		}
		pace.Tick()
	})
	if err == nil {
		err = addErr
	}
	return res, cont, err
}
