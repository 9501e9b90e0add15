// Package encstore is a cache.Indexer that keeps each object as its encoded
// bytes, compressed, and decodes it on every read: an informer's store at a
// tenth of the heap of decoded objects, where every read returns an object the
// caller owns and may change.
//
// # Why
//
// A decoded Pod is mostly strings, slices and maps, each with its own header
// and allocation; the same Pod encoded as protobuf, with managedFields and
// last-applied already cut, is a few kilobytes, and compressed with a
// dictionary trained on the first Pods of the informer, a fraction of that.
// leanstore's sharing also makes a cache small, by making equal parts of
// Pods one value, but code that changes a cached object in place (client-go
// forbids it, but it happens) then corrupts every Pod sharing the part; here
// every read is a private decode.
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
// SharedReads hands out the hot cache's objects themselves: a hot Get then
// costs a lookup instead of a copy, and readers must not change what they read,
// as with client-go's caches.
//
// An object whose encoding is already in hand (a decoder that read it from the
// wire, stripped) is stored without encoding it again: AddEncoded, or
// Options.Encoded, which the store asks before it encodes. Upsert is Update for
// informers (package informer uses it): it reports the replaced object without
// decoding it until asked, and keeps the bytes of an object whose
// resourceVersion did not change. Pack encodes and compresses an object as
// the store would keep it without storing it (Packed), so that a list's
// objects wait for the informer at that size instead of decoded; UpsertPacked
// then keeps those bytes. Replace changes the store in place, one
// object at a time, so that a re-list never builds a second store beside the
// first, and unchanged objects keep their bytes.
//
// # What it costs
//
// docs/memory.md ("Choosing the encoded store, sharing or the defaults")
// gives the figures with the files they come from: bytes per object, sync CPU
// and peaks beside client-go and leanstore's other modes
// (bench/results/cachebench-encoded.txt), and this package's benchmarks of
// Get, a reconcile and a List of everything (bench/results/encstore-bench.txt,
// whose header has the commands). In short: the smallest typed cache
// leanstore has; a cold Get costs about the decode an informer pays for every
// object it receives; storing a changed object costs an encode; a List of the
// whole store decodes every object, the worst case.
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
