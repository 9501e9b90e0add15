package encstore

import (
	"errors"
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// Options configure a Store. Only Codec is required; every other zero value
// is a working default.
type Options struct {
	// Codec encodes and decodes the store's objects (Protobuf,
	// UnstructuredJSON, UnstructuredCBOR).
	Codec Codec
	// KeyFunc computes an object's key; the default is client-go's
	// DeletionHandlingMetaNamespaceKeyFunc, which informers use.
	KeyFunc cache.KeyFunc
	// Indexers are the store's indexes, as in cache.NewIndexer.
	Indexers cache.Indexers
	// Compression is how kept bytes are compressed; the default is S2Dict.
	Compression Compression
	// DictSamples is the number of first objects a dictionary is trained on
	// (S2Dict, ZstdDict); 0 means 256. Until then objects are kept uncompressed, and
	// compressed once the dictionary exists.
	DictSamples int
	// DictSize is the largest dictionary in bytes; 0 means 64 KiB for S2Dict
	// (S2's largest) and 32 KiB for ZstdDict.
	DictSize int
	// HotCacheBytes bounds the decoded objects kept for repeated reads, in
	// estimated bytes of heap; 0 means 4 MiB, a negative value turns the hot
	// cache off.
	HotCacheBytes int64
	// SharedReads hands out the hot cache's objects themselves instead of a
	// deep copy of them: a hot read costs a map lookup, and every reader of
	// an object, like the old object Upsert reports, may hold the same
	// pointer, which nobody may change (client-go's rule for every cache). A
	// miss keeps the object it decodes without copying it. Off, every read
	// returns an object the caller owns.
	SharedReads bool
	// Encoded, when set, is asked for the codec's bytes of an object before
	// the store encodes it: a decoder that still holds the bytes an object
	// was decoded from returns them, and the store keeps them without
	// encoding the object again. It must return bytes that decode to an
	// object equal to obj, and not change them afterwards.
	Encoded func(obj any) ([]byte, bool)
}

const (
	defaultDictSamples   = 256
	defaultDictSize      = 32 << 10
	defaultHotCacheBytes = 4 << 20
)

// NewStore returns an empty Store.
func NewStore(o Options) (*Store, error) {
	if o.Codec == nil {
		return nil, errors.New("encstore: a codec is required")
	}
	if o.KeyFunc == nil {
		o.KeyFunc = cache.DeletionHandlingMetaNamespaceKeyFunc
	}
	if o.DictSamples <= 0 {
		o.DictSamples = defaultDictSamples
	}
	if o.DictSize <= 0 {
		o.DictSize = defaultDictSize
		if o.Compression == S2Dict {
			o.DictSize = 64 << 10
		}
	}
	if o.HotCacheBytes == 0 {
		o.HotCacheBytes = defaultHotCacheBytes
	}
	switch o.Compression {
	case ZstdDict, Zstd, NoCompression, S2Dict:
	default:
		return nil, fmt.Errorf("encstore: unknown compression %d", o.Compression)
	}
	comp, err := newCompressor(o.Compression, o.DictSamples, o.DictSize)
	if err != nil {
		return nil, fmt.Errorf("encstore: %w", err)
	}
	s := &Store{
		reader:  reader{codec: o.Codec, comp: comp, shared: o.SharedReads},
		keyFunc: o.KeyFunc,
		encoded: o.Encoded,
		items:   map[string]entry{},
		index:   newIndex(),
	}
	if o.HotCacheBytes > 0 {
		s.hot = newHotCache(o.HotCacheBytes)
	}
	if err := s.index.add(o.Indexers); err != nil {
		return nil, fmt.Errorf("encstore: %w", err)
	}
	return s, nil
}

// NewIndexer is NewStore for callers that want a cache.Indexer from a key
// function and indexers, as client-go's cache.NewIndexer takes them (a store
// factory for package informer).
func NewIndexer(o Options) func(cache.KeyFunc, cache.Indexers) (cache.Indexer, error) {
	return func(keyFunc cache.KeyFunc, indexers cache.Indexers) (cache.Indexer, error) {
		o := o
		o.KeyFunc, o.Indexers = keyFunc, indexers
		return NewStore(o)
	}
}
