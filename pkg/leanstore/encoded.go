package leanstore

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/encstore"
	"github.com/cachetune/cachetune/internal/informer"
	"github.com/cachetune/cachetune/internal/reflector"
)

// Compression is how an encoded store (WithEncodedStore) compresses the
// objects it keeps.
type Compression int

const (
	// CompressionS2Dict compresses each object with S2 and a dictionary
	// trained on the informer's first objects. The default: about as small
	// as zstd with a dictionary, and several times faster to read.
	CompressionS2Dict Compression = iota
	// CompressionZstdDict compresses each object with zstd and a trained
	// dictionary: a little smaller than S2Dict, slower to read and write.
	CompressionZstdDict
	// CompressionNone keeps the encoded bytes as they are.
	CompressionNone
)

func (c Compression) String() string {
	switch c {
	case CompressionS2Dict:
		return "s2-dict"
	case CompressionZstdDict:
		return "zstd-dict"
	case CompressionNone:
		return "none"
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// EncodedStore configures WithEncodedStore.
type EncodedStore struct {
	// Compression of the kept objects; the zero value is CompressionS2Dict.
	Compression Compression
	// HotCacheBytes bounds the decoded objects kept for repeated Gets of
	// the same object, in estimated bytes of heap: 0 means 4 MiB, a negative
	// value turns the hot cache off.
	HotCacheBytes int64
	// Resources limits the encoded store to these resources' informers;
	// empty means every informer of the factory.
	Resources []schema.GroupResource
}

// WithEncodedStore keeps the objects of the factory's informers (or of
// EncodedStore.Resources' only) as their stripped encoded bytes, compressed,
// and decodes them on every read: protobuf for typed and metadata-only
// informers, JSON for dynamic ones and for Go types without protobuf (a
// custom resource's, through NewRESTInformer). It is opt-in.
//
// What changes for the program: every read (listers, GetStore, GetIndexer,
// ByIndex) returns a freshly decoded object that the caller owns and may
// change, unlike any other informer cache, client-go's included; handlers
// still receive decoded objects. What it costs: a read decodes (a repeated Get
// of the same unchanged object is a copy from a bounded hot cache), so a List
// of the whole cache decodes every object. docs/memory.md ("Choosing the
// encoded store, sharing or the defaults") gives the measured figures.
//
// The informer is client-go's SharedIndexInformer carried over around the
// encoded store, with the same behaviour (handlers, resync, SetTransform,
// AddIndexers before start, HasSynced, LastSyncResourceVersion). The record of
// what the informer has been handed, which re-lists diff against, keeps only
// each object's key, uid and resourceVersion under it.
//
// It excludes WithSharing and WithMutationGuard (whose values it would only
// encode): given together they are an invalid option. Interning is skipped,
// for the same reason. Informers that leanstore cannot list itself (a fake clientset, see
// ListPathClientGo) keep client-go's store.
func WithEncodedStore(cfg EncodedStore) Option {
	return func(o *options) { c := cfg; o.encoded = &c }
}

// encodedFor returns the encoded store's configuration for gr's informer, or
// nil when its objects are kept decoded.
func (o *options) encodedFor(gr schema.GroupResource) *EncodedStore {
	if o.encoded == nil {
		return nil
	}
	if len(o.encoded.Resources) == 0 {
		return o.encoded
	}
	for _, r := range o.encoded.Resources {
		if r == gr {
			return o.encoded
		}
	}
	return nil
}

// validateEncoded is validate's part for WithEncodedStore.
func (o *options) validateEncoded() error {
	if o.encoded == nil {
		return nil
	}
	switch o.encoded.Compression {
	case CompressionS2Dict, CompressionZstdDict, CompressionNone:
	default:
		return fmt.Errorf("leanstore: WithEncodedStore: unknown compression %s", o.encoded.Compression)
	}
	if o.strip.Share {
		return fmt.Errorf("leanstore: WithEncodedStore and WithSharing exclude each other: an encoded store keeps bytes, not shared values")
	}
	if o.guardSet && o.strip.Guard {
		return fmt.Errorf("leanstore: WithEncodedStore and WithMutationGuard exclude each other: an encoded store hands out objects the caller owns, there is nothing shared to guard")
	}
	return nil
}

func (c Compression) store() encstore.Compression {
	switch c {
	case CompressionZstdDict:
		return encstore.ZstdDict
	case CompressionNone:
		return encstore.NoCompression
	}
	return encstore.S2Dict
}

// encodedInformer builds the informer of cfg over an encoded store: package
// informer's SharedIndexInformer, whose store is an encstore.Store.
func encodedInformer(lw cache.ListerWatcher, handed *reflector.Handed, cfg informerConfig, enc *EncodedStore) (cache.SharedIndexInformer, error) {
	var codec encstore.Codec
	if _, ok := cfg.example.(*unstructured.Unstructured); ok {
		codec = encstore.UnstructuredJSON()
	} else {
		example := cfg.example
		newObject := func() runtime.Object { return newLike(example) }
		codec = encstore.Protobuf(newObject)
		if _, ok := example.(interface{ Unmarshal([]byte) error }); !ok {
			// A custom resource's Go type (NewRESTInformer, as
			// controller-runtime's cache uses it): kept as JSON.
			codec = encstore.TypedJSON(newObject)
		}
	}
	return informer.NewWithStore(lw, cfg.example, informer.Options{
		SharedIndexInformerOptions: cache.SharedIndexInformerOptions{
			ResyncPeriod:      cfg.resync,
			Indexers:          cfg.indexers,
			ObjectDescription: cfg.name,
		},
		NewStore: encstore.NewIndexer(encstore.Options{
			Codec:         codec,
			Compression:   enc.Compression.store(),
			HotCacheBytes: enc.HotCacheBytes,
		}),
		LastStored: handed.LastStored,
	})
}

// encodedStats returns the encoded store's statistics, and false when the
// informer keeps its objects decoded.
func (i *Informer) encodedStats() (encstore.Stats, bool) {
	s, ok := i.GetIndexer().(*encstore.Store)
	if !ok {
		return encstore.Stats{}, false
	}
	return s.Stats(), true
}

// EncodedStatus is what an informer's encoded store holds and how its reads
// were served (Status.Encoded).
type EncodedStatus struct {
	Compression string `json:"compression"`
	Objects     int    `json:"objects"`
	// KeptBytes is the size of the kept bytes, compressed; DictBytes the
	// size of the trained dictionary (0 before training, or when training
	// failed: DictError says why).
	KeptBytes int64  `json:"keptBytes"`
	DictBytes int    `json:"dictBytes"`
	DictError string `json:"dictError,omitempty"`
	// HotHits and HotMisses count the hot cache's lookups, HotBytes its
	// estimated heap; Decodes the objects decoded for reads.
	HotHits   uint64 `json:"hotHits"`
	HotMisses uint64 `json:"hotMisses"`
	HotBytes  int64  `json:"hotBytes"`
	Decodes   uint64 `json:"decodes"`
}

func (i *Informer) encodedStatus() *EncodedStatus {
	st, ok := i.encodedStats()
	if !ok {
		return nil
	}
	return &EncodedStatus{
		Compression: st.Compression.String(), Objects: st.Objects, KeptBytes: st.KeptBytes,
		DictBytes: st.DictBytes, DictError: st.DictError,
		HotHits: st.HotHits, HotMisses: st.HotMisses, HotBytes: st.HotBytes, Decodes: st.Decodes,
	}
}
