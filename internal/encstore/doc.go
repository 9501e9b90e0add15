// Package encstore is a cache.Indexer that keeps each object as its encoded
// bytes, compressed, and decodes it on every read: an informer's store at a
// fraction of the heap of decoded objects, where every read returns an object
// the caller owns and may change.
//
// # Why
//
// A decoded Pod on the Go heap costs about 20 KB in client-go's store, 17.4 KB
// with leanstore's stripping and interning; leanstore's sharing brings it to
// 3.5 KB by making equal parts of Pods one value, which code that changes a
// cached object in place (client-go forbids it, but it happens) corrupts for
// every Pod that shares the part. The same Pod stripped and encoded as
// protobuf is about 4.5 KB; compressed with zstd and a dictionary trained on
// the first Pods of the informer, about 0.8 KB (the benchmarks of this
// package, bench_test.go, measure them).
//
// # How
//
//	s, err := encstore.New(encstore.Options{
//		Codec:    encstore.Protobuf(func() runtime.Object { return &corev1.Pod{} }),
//		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
//	})
//
// Each stored object is encoded by the Codec (Protobuf for typed objects and
// PartialObjectMetadata, UnstructuredJSON or UnstructuredCBOR for dynamic
// informers) and compressed (Compression: ZstdDict by default, Zstd,
// NoCompression). ZstdDict keeps the first DictSamples objects uncompressed,
// trains a dictionary on them (github.com/klauspost/compress/dict), then
// compresses them and every later object with it; if training fails (too few
// or too small objects) it compresses without a dictionary and Stats says why.
// An object's key, resourceVersion and index values are kept beside its
// bytes, computed once when it is stored: an update or a delete never decodes
// the old object to find its index entries.
//
// Every read (Get, GetByKey, List, ByIndex, Index, and listers built on the
// store) returns a freshly decoded object. A bounded hot cache of decoded
// objects (HotCacheBytes, 4 MiB of estimated heap by default) serves repeated
// Gets of one object without decoding: it is keyed by key, checked against
// the resourceVersion the store holds, and its objects are never handed out;
// a hit returns a DeepCopy, which costs a fraction of a decode. Gets fill it;
// List, ByIndex and Index read from it but do not fill it, so that a scan of
// the store does not evict what reconciles read.
//
// An object whose encoding is already in hand (a decoder that read it from the
// wire, stripped) is stored without encoding it again: AddEncoded, or
// Options.Encoded, which the store asks before it encodes. Upsert is Update
// for informers (package informer uses it): it reports the replaced object
// without decoding it until asked, and keeps the bytes of an object whose
// resourceVersion did not change. Replace changes the store in place, one
// object at a time, so that a re-list never holds a second store beside the
// first; unchanged objects keep their bytes.
//
// # Choosing it
//
// Choose it when the cache's memory matters more than the CPU of reads: every
// read decodes (or copies, from the hot cache), so a controller that Lists its
// whole cache often pays a decode per object per List, where client-go's
// store hands out pointers. A reconcile that Gets one object and Lists its
// namespace pays a decode per object of the namespace. Choose leanstore's
// sharing instead when reads must cost nothing and every reader follows
// client-go's never-mutate rule; choose the defaults when neither memory nor
// the rule is a concern. The benchmarks of this package (bench_test.go)
// measure each of these costs beside client-go's store.
package encstore
