// Package encstore is a cache.Indexer that keeps each object as its encoded
// bytes, compressed, and decodes it on every read: an informer's store at a
// tenth of the heap of decoded objects, where every read returns an object the
// caller owns and may change.
//
// # Why
//
// A decoded Pod of cachetune's dataset costs about 20 KB of heap in
// client-go's store (17.4 KB with leanstore's stripping and interning).
// leanstore's sharing brings it to 3.5 KB by making equal parts of Pods one
// value, which code that changes a cached object in place (client-go forbids
// it, but it happens) corrupts for every Pod sharing the part. The same Pod,
// stripped and encoded as protobuf, is about 4.6 KB; compressed with a
// dictionary trained on the first Pods of the informer, about 0.8 KB; with its
// key, resourceVersion and index entries, 1.3 to 1.4 KB of heap per Pod in
// all. Every figure here comes from this package's benchmarks
// (bench_test.go), run on a busy shared machine: their ratios hold, their
// times are several times a quiet machine's.
//
// # How
//
//	s, err := encstore.NewStore(encstore.Options{
//		Codec:    encstore.Protobuf(func() runtime.Object { return &corev1.Pod{} }),
//		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
//	})
//
// Each stored object is encoded by the Codec (Protobuf for typed objects and
// PartialObjectMetadata, UnstructuredJSON or UnstructuredCBOR for dynamic
// informers) and compressed (Compression). The dictionary modes, S2Dict (the
// default) and ZstdDict, keep the first DictSamples objects uncompressed,
// train a dictionary on them (github.com/klauspost/compress/dict), then
// compress them and every later object with it; if training fails (too few or
// too small objects) they compress without a dictionary, and Stats says why.
// An object's key, resourceVersion and index values are kept beside its
// bytes, computed once when it is stored: an update or a delete never decodes
// the old object to find its index entries.
//
// Every read (Get, GetByKey, List, ByIndex, Index, and listers built on the
// store) returns a freshly decoded object. A bounded hot cache of decoded
// objects (HotCacheBytes, 4 MiB of estimated heap by default) serves repeated
// Gets of one object without decoding: it is keyed by key and checked against
// the resourceVersion the store holds, and its objects are never handed out; a
// hit returns a DeepCopy. Gets fill it; List, ByIndex and Index read from it but
// do not fill it, so that a scan does not evict what reconciles read.
//
// An object whose encoding is already in hand (a decoder that read it from the
// wire, stripped) is stored without encoding it again: AddEncoded, or
// Options.Encoded, which the store asks before it encodes. Upsert is Update for
// informers (package informer uses it): it reports the replaced object without
// decoding it until asked, and keeps the bytes of an object whose
// resourceVersion did not change. Replace changes the store in place, one
// object at a time, so that a re-list never builds a second store beside the
// first, and unchanged objects keep their bytes.
//
// # What it costs
//
// Measured with
//
//	go test -run '^$' -bench . -benchmem -benchtime 4000x ./internal/encstore/
//
// on 10,000 Pods in 100 namespaces, on a shared 2-core machine whose load
// average was about 24: times are several times a quiet machine's, and only
// their ratios, taken within one run, are meant to hold.
//
//   - Heap per Pod, store, index and keys included: client-go 19.6 KB; plain
//     protobuf 5.1 KB; zstd without a dictionary 2.4 KB; S2Dict 1.3 to 1.4
//     KB (1.0 KB of it the kept bytes); ZstdDict 1.4 KB (0.8 KB kept). Pods
//     that each have their own spec cost the same. A full hot cache adds its
//     budget (4 MiB: 0.4 KB per Pod at 10,000).
//   - Get, median, against decoding the Pod's stripped bytes (1.0): from the
//     hot cache 0.9 (a DeepCopy; client-go's DeepCopy of its shared Pod,
//     1.1); decoding with S2Dict 1.3, with ZstdDict 2.0; decoding the Pod as
//     the API server sends it (managedFields and last-applied included) 1.2.
//     A cold Get with S2Dict costs about the decode an informer pays for
//     every object it receives; client-go's Get without a copy, 0.05.
//   - Storing a changed Pod (a watch's update): encoding and compressing,
//     about 1.3 decodes with S2Dict, three to four with ZstdDict;
//     client-go stores a pointer, at about a fortieth of it.
//   - A re-list of the 10,000 Pods, a tenth of them changed
//     (BenchmarkRelist): 1.8 times the CPU of client-go's Replace, in place;
//     3.9 MB of garbage against client-go's 1.8 MB (its new map and index,
//     built beside the old ones).
//   - A reconcile that Gets a Pod and Lists its namespace (100 Pods): 1.15
//     times client-go with a DeepCopy of every Pod read, 90 times client-go
//     without copies (CPU time).
//   - A List of the whole store decodes every Pod: about 1,400 times
//     client-go's List, which copies 10,000 pointers, and 250 MB allocated.
//     This is the worst case.
//
// # Choosing it
//
// Choose it when the cache's memory matters more than the CPU of reads and
// when readers must own what they read. A controller that Lists its whole
// cache often, or Lists large namespaces on every reconcile, pays a decode per
// object each time; there leanstore's defaults (reads cost nothing, objects
// are private to the cache) or its sharing (smaller, but readers must never
// change what they read) fit better.
package encstore
