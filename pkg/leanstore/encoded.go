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
	// SharedReads makes a Get of an object in the hot cache return the hot
	// cache's object itself, not a copy: a hot Get then costs a lookup, as
	// client-go's Get does, instead of a deep copy (about 1 µs against 15 to
	// 20 µs for a Pod, bench/results/encstore-get-shared.txt), and every
	// reader of the object holds the same pointer, so none may change it,
	// client-go's rule for every informer cache. Off (the default), every
	// read returns an object the caller owns.
	SharedReads bool
	// Resources limits the encoded store to these resources' informers;
	// empty means every informer of the factory.
	Resources []schema.GroupResource
}

// forResource returns the encoded store's configuration for gr's informer, or
// nil when its objects are kept decoded (e is nil: no WithEncodedStore).
func (e *EncodedStore) forResource(gr schema.GroupResource) *EncodedStore {
	if e == nil || len(e.Resources) == 0 {
		return e
	}
	for _, r := range e.Resources {
		if r == gr {
			return e
		}
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

// encodedInformer builds an informer of example's type over an encoded store:
// package informer's SharedIndexInformer, whose store is an encstore.Store.
func encodedInformer(lw *reflector.ListWatch, handed *reflector.Handed, example runtime.Object, opts cache.SharedIndexInformerOptions, enc *EncodedStore) (cache.SharedIndexInformer, error) {
	var codec encstore.Codec
	if _, ok := example.(*unstructured.Unstructured); ok {
		codec = encstore.UnstructuredJSON()
	} else {
		newObject := func() runtime.Object { return newLike(example) }
		codec = encstore.Protobuf(newObject)
		if _, ok := example.(interface{ Unmarshal([]byte) error }); !ok {
			// A custom resource's Go type (NewRESTInformer, as
			// controller-runtime's cache uses it): kept as JSON.
			codec = encstore.TypedJSON(newObject)
		}
	}
	inf, err := informer.NewWithStore(lw, example, informer.Options{
		SharedIndexInformerOptions: opts,
		NewStore: encstore.NewIndexer(encstore.Options{
			Codec:         codec,
			Compression:   enc.Compression.store(),
			HotCacheBytes: enc.HotCacheBytes,
			SharedReads:   enc.SharedReads,
		}),
		LastStored: handed.LastStored,
		Packed:     handed.Packed,
		Unpacked:   lw.Unpacked,
	})
	if err != nil {
		return nil, err
	}
	if s, ok := inf.GetIndexer().(*encstore.Store); ok {
		lw.PackListed(storePacker{s})
	}
	return inf, nil
}

// storePacker packs an encoded informer's listed objects with its store
// (reflector.Packer): they wait in the informer's queue at the size the store
// keeps them, and the store keeps those very bytes.
type storePacker struct{ s *encstore.Store }

func (p storePacker) Pack(obj runtime.Object) (runtime.Object, error) {
	packed, err := p.s.Pack(obj)
	if err != nil {
		return nil, err
	}
	return packed, nil
}

func (p storePacker) IsPacked(obj any) bool { return p.s.IsPacked(obj) }

// encodedStatus is Status.Encoded of an encoded store with statistics st.
func encodedStatus(st encstore.Stats) *EncodedStatus {
	return &EncodedStatus{
		Compression: st.Compression.String(), Objects: st.Objects, KeptBytes: st.KeptBytes,
		DictBytes: st.DictBytes, DictError: st.DictError,
		HotHits: st.HotHits, HotMisses: st.HotMisses, HotBytes: st.HotBytes, Decodes: st.Decodes,
	}
}
