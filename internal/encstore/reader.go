package encstore

import (
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
)

// entry is one kept object.
type entry struct {
	// data is a format byte and the codec's bytes, maybe compressed; never
	// changed once stored, so readers decode it outside the lock. A stored
	// change always stores new bytes: the hot cache takes their address as
	// the version of the object (see version).
	data []byte
	// rv is the object's resourceVersion.
	rv string
	// values are the object's index values, one list per index (in the
	// order of index.names), computed when it was stored.
	values [][]string
}

// version identifies the stored version of an entry for the hot cache.
func (e entry) version() *byte { return &e.data[0] }

// reader decodes a store's entries for its callers: it decompresses them,
// decodes them with the codec and serves repeated reads of an unchanged
// entry from the hot cache. Store embeds it; writes go through Store.
type reader struct {
	codec Codec
	comp  *compressor
	hot   *hotCache // nil: no hot cache
	// shared hands out the hot cache's objects themselves (SharedReads).
	shared bool

	// sizer estimates the heap a decoded object holds, for the hot cache.
	sizer sizer
	// bufs are decompression buffers.
	bufs sync.Pool

	// decodes counts objects decoded, for Stats.
	decodes atomic.Uint64
}

// read returns e decoded for the caller, from the hot cache when it can;
// remember puts what it decodes into the hot cache. The caller owns what it
// gets unless reads are shared.
func (r *reader) read(key string, e entry, remember bool) (runtime.Object, error) {
	if r.shared {
		if obj, ok := r.hot.get(key, e.version()); ok {
			return obj, nil
		}
	} else if obj, ok := r.hot.copyOf(key, e.version()); ok {
		return obj, nil
	}
	obj, raw, err := r.decodeRaw(key, e)
	if err != nil {
		return nil, err
	}
	if remember && r.hot != nil {
		kept := obj
		if !r.shared {
			kept = obj.DeepCopyObject()
		}
		r.hot.put(key, e.version(), kept, r.sizer.size(obj, raw))
	}
	return obj, nil
}

func (r *reader) decode(key string, e entry) (runtime.Object, error) {
	obj, _, err := r.decodeRaw(key, e)
	return obj, err
}

// decodeRaw decodes e and returns the object and the size of its codec bytes.
func (r *reader) decodeRaw(key string, e entry) (runtime.Object, int, error) {
	b := r.getBuf()
	defer r.putBuf(b)
	raw, err := r.comp.decompress(e.data, *b)
	if err != nil {
		return nil, 0, fmt.Errorf("encstore: read %s: %w", key, err)
	}
	if cap(raw) > cap(*b) && e.data[0] != formatPlain {
		*b = raw // keep the grown buffer
	}
	obj, err := r.codec.Decode(raw)
	if err != nil {
		return nil, 0, fmt.Errorf("encstore: read %s: %w", key, err)
	}
	r.decodes.Add(1)
	return obj, len(raw), nil
}

func (r *reader) getBuf() *[]byte {
	if b, ok := r.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 16<<10)
	return &b
}

func (r *reader) putBuf(b *[]byte) {
	if cap(*b) > 1<<20 {
		return // an unusually large object: let its buffer go
	}
	r.bufs.Put(b)
}

// keyed is an entry with its key, for reads decoded outside the lock.
type keyed struct {
	key string
	e   entry
}

// decodeAll decodes the snapshot es for the caller.
func (r *reader) decodeAll(es []keyed) ([]any, error) {
	out := make([]any, 0, len(es))
	for _, k := range es {
		obj, err := r.read(k.key, k.e, false)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}
