package leanstore

import (
	"math/bits"
	"reflect"
	"unsafe"

	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/encstore"
)

// Census is a count of what one informer's store holds.
type Census struct {
	Informer string `json:"informer"`
	Resource string `json:"resource"`
	Objects  int    `json:"objects"`
	// EstimatedBytes is an estimate of the heap the store holds: the mean size of a
	// sample of objects (every allocation they reference, rounded up to Go's size
	// classes, strings shared between sampled objects counted once) times Objects,
	// plus the store's own per-object overhead.
	EstimatedBytes int64   `json:"estimatedBytes"`
	BytesPerObject float64 `json:"bytesPerObject"`
	Sampled        int     `json:"sampled"`
	// Shard says whose share of the objects these are (WithShard); nil
	// without sharding.
	Shard *ShardCensus `json:"shard,omitempty"`
}

// censusSample is how many objects a census sizes. Sizing walks each object with
// reflection (tens of microseconds for a Pod), so a census costs about a
// millisecond whatever the store's size, cheap enough to run at every scrape.
const censusSample = 64

// storeOverhead is what client-go's store adds per object beyond the object
// and the bytes of its key: the key string, the items-map slot and the
// namespace-index entry.
const storeOverhead = 96

// storeEntry is the store's per-object cost beside the object: its key, of
// keyBytes, and the entry that holds it.
func storeEntry(keyBytes float64) float64 { return keyBytes + storeOverhead }

// Census counts the informer's objects and estimates the heap they hold.
func (i *Informer) Census() Census {
	var c Census
	if st, ok := i.encodedStats(); ok {
		c = encodedCensus(st, i.GetIndexer().ListKeys())
	} else {
		c = censusOf(i.GetIndexer())
	}
	c.Informer, c.Resource = i.name, i.resource.String()
	if i.lw != nil {
		c.Shard = i.shard.census()
	}
	return c
}

// censusOf sizes an evenly spread sample of a store's objects.
func censusOf(store cache.Store) Census {
	keys := store.ListKeys()
	c := Census{Objects: len(keys)}
	if len(keys) == 0 {
		return c
	}
	step := max(1, len(keys)/censusSample)
	s := newSizer()
	var keyBytes int
	for k := 0; k < len(keys) && c.Sampled < censusSample; k += step {
		obj, ok, _ := store.GetByKey(keys[k])
		if !ok {
			continue
		}
		s.object(obj)
		keyBytes += len(keys[k])
		c.Sampled++
	}
	if c.Sampled == 0 {
		return c
	}
	c.BytesPerObject = s.perObject(len(keys)) + storeEntry(float64(keyBytes)/float64(c.Sampled))
	c.EstimatedBytes = int64(c.BytesPerObject * float64(c.Objects))
	return c
}

// EstimateBytesPerObject estimates the heap a cache of n objects like sample,
// with store keys of meanKeyBytes on average, would take per object, the way
// Census does: memory the sampled objects share (interned strings, shared
// parts) counts once, the rest per object, and the store's key and entry are
// added.
func EstimateBytesPerObject(sample []any, n int, meanKeyBytes float64) float64 {
	s := newSizer()
	for _, obj := range sample {
		s.object(obj)
	}
	return s.perObject(n) + storeEntry(meanKeyBytes)
}

// sizer sums the allocations reachable from a sample of objects. It records, for
// each allocation, how many sampled objects reach it: an allocation reached from
// one sampled object stands for one per object of the whole store, while one
// reached from several is shared (an interned string, a shared part) and exists
// once, however many objects hold it.
type sizer struct {
	allocs map[uintptr]*alloc
	sample int   // index of the object being walked, from 1
	own    int64 // allocations that could not be identified, counted per object
}

type alloc struct {
	size       int64
	objects    int
	lastSample int
}

func newSizer() *sizer { return &sizer{allocs: map[uintptr]*alloc{}} }

// object walks one sampled object.
func (s *sizer) object(obj any) {
	s.sample++
	s.add(reflect.ValueOf(&obj).Elem())
}

// perObject estimates the bytes per object of a store of n objects.
func (s *sizer) perObject(n int) float64 {
	if s.sample == 0 || n == 0 {
		return 0
	}
	own, shared := float64(s.own), 0.0
	for _, a := range s.allocs {
		if a.objects > 1 {
			shared += float64(a.size)
		} else {
			own += float64(a.size)
		}
	}
	return own/float64(s.sample) + shared/float64(max(n, s.sample))
}

// add counts what v references (not v's own inline bytes).
func (s *sizer) add(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || s.visit(v.Pointer(), roundAlloc(v.Type().Elem().Size(), hasPointers(v.Type().Elem()))) {
			return
		}
		s.inline(v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		e := v.Elem()
		switch e.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
			s.add(e) // pointer-shaped: stored in the interface word itself
		case reflect.Bool:
		default:
			// Other values are boxed in their own allocation, which the
			// interface's data word points at.
			size := roundAlloc(e.Type().Size(), hasPointers(e.Type()))
			if v.CanAddr() {
				box := (*[2]uintptr)(v.Addr().UnsafePointer())[1]
				if s.visit(box, size) {
					return
				}
			} else {
				s.own += size // a map value: its box cannot be told apart
			}
			s.inline(e)
		}
	case reflect.String:
		if v.Len() == 0 {
			return
		}
		p := uintptr(unsafe.Pointer(unsafe.StringData(v.String())))
		size := int64(v.Len()) // the tiny allocator packs short strings together
		if v.Len() >= 16 {
			size = roundAlloc(uintptr(v.Len()), false)
		}
		s.visit(p, size)
	case reflect.Slice:
		et := v.Type().Elem()
		if v.IsNil() || v.Cap() == 0 || s.visit(v.Pointer(), roundAlloc(uintptr(v.Cap())*et.Size(), hasPointers(et))) {
			return
		}
		for j := range v.Len() {
			s.inline(v.Index(j))
		}
	case reflect.Map:
		if v.IsNil() || s.visit(v.Pointer(), mapBytes(v)) {
			return
		}
		iter := v.MapRange()
		for iter.Next() {
			s.inline(iter.Key())
			s.inline(iter.Value())
		}
	case reflect.Struct, reflect.Array:
		s.inline(v)
	}
}

// inline counts what the fields or elements of an inline value reference.
func (s *sizer) inline(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for j := range v.NumField() {
			s.add(v.Field(j))
		}
	case reflect.Array:
		for j := range v.Len() {
			s.add(v.Index(j))
		}
	case reflect.Pointer, reflect.Interface, reflect.String, reflect.Slice, reflect.Map:
		s.add(v)
	}
}

// visit records that the current object reaches the allocation at p of size
// bytes and reports whether the walk already went below p for this object.
func (s *sizer) visit(p uintptr, size int64) bool {
	a := s.allocs[p]
	if a == nil {
		s.allocs[p] = &alloc{size: size, objects: 1, lastSample: s.sample}
		return false
	}
	if a.lastSample == s.sample {
		return true
	}
	a.lastSample = s.sample
	a.objects++
	return false
}

// mapBytes approximates a Go (swiss table) map's allocation: groups of 8 slots
// with a control word, at most 7/8 full, plus the map header and a directory.
func mapBytes(v reflect.Value) int64 {
	kt, vt := v.Type().Key(), v.Type().Elem()
	slot := kt.Size() + vt.Size()
	n := uintptr(v.Len())
	if n <= 8 {
		return roundAlloc(48, true) + roundAlloc(8+8*slot, true)
	}
	slots := uintptr(1) << bits.Len(uint((n*8/7)-1))
	groups := slots / 8
	return roundAlloc(48, true) + roundAlloc(groups*(8+8*slot), true) + 64
}

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}

// sizeClasses are Go's small allocation size classes (runtime/sizeclasses.go).
var sizeClasses = []uintptr{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792,
	2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240,
	10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// roundAlloc is the heap an allocation of n bytes takes.
func roundAlloc(n uintptr, pointers bool) int64 {
	if n == 0 {
		return 0
	}
	if n < 16 && !pointers {
		return int64(n)
	}
	if n > 32768 {
		return int64((n + 8191) &^ 8191)
	}
	lo, hi := 0, len(sizeClasses)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if sizeClasses[mid] >= n {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return int64(sizeClasses[lo])
}

// encodedEntry is what an encoded store (WithEncodedStore) keeps per object
// beside its kept bytes and key: the entry (bytes, resourceVersion, index
// values) and, in the handed set, the object's record (see reflector.Record), whose uid and
// resourceVersion strings are its own. A decode-free estimate: sampling
// objects as censusOf does would decode them, and size what the store does
// not hold.
const encodedEntry = 64 + 64 + 48 + 16 + 24

// encodedCensus estimates an encoded store's heap from its statistics and
// keys, without decoding anything.
func encodedCensus(st encstore.Stats, keys []string) Census {
	c := Census{Objects: st.Objects}
	if c.Objects == 0 {
		return c
	}
	step := max(1, len(keys)/censusSample)
	var keyBytes int
	for k := 0; k < len(keys) && c.Sampled < censusSample; k += step {
		keyBytes += len(keys[k])
		c.Sampled++
	}
	meanKey := 0.0
	if c.Sampled > 0 {
		meanKey = float64(keyBytes) / float64(c.Sampled)
	}
	perObject := float64(st.KeptBytes)/float64(c.Objects) + storeEntry(meanKey) + encodedEntry + meanKey
	c.EstimatedBytes = int64(perObject*float64(c.Objects)) + int64(st.DictBytes) + st.HotBytes
	c.BytesPerObject = float64(c.EstimatedBytes) / float64(c.Objects)
	return c
}
