package encstore_test

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/encstore"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// The benchmarks compare the encoded store with client-go's indexer holding
// decoded Pods, on the dataset's Pods as leanstore keeps them by default
// (managedFields and last-applied stripped). They are meant to be run briefly
// and compared run against run:
//
//	go test -run '^$' -bench . -benchtime 2000x ./internal/encstore/

const benchPods = 10000

func newPodCodec() encstore.Codec {
	return encstore.Protobuf(func() kruntime.Object { return &corev1.Pod{} })
}

var namespaceIndex = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}

// storeKind is one way of keeping the benchmarks' Pods.
type storeKind struct {
	name string
	new  func() (cache.Indexer, error)
}

func encodedKind(name string, c encstore.Compression, hot int64) storeKind {
	return storeKind{name, func() (cache.Indexer, error) {
		return encstore.NewStore(encstore.Options{Codec: newPodCodec(), Indexers: namespaceIndex, Compression: c, HotCacheBytes: hot})
	}}
}

// sharedKind is the default encoded store with SharedReads: hot reads hand out
// the hot cache's object.
var sharedKind = storeKind{"encoded-hot-shared", func() (cache.Indexer, error) {
	return encstore.NewStore(encstore.Options{Codec: newPodCodec(), Indexers: namespaceIndex, SharedReads: true})
}}

var clientGoKind = storeKind{"client-go", func() (cache.Indexer, error) {
	return cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, namespaceIndex), nil
}}

var heapKinds = []storeKind{
	clientGoKind,
	encodedKind("plain", encstore.NoCompression, -1),
	encodedKind("zstd", encstore.Zstd, -1),
	encodedKind("zstd-dict", encstore.ZstdDict, -1),
	encodedKind("s2-dict", encstore.S2Dict, -1),
}

func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// fillStore adds pods to a new store of kind k, as an informer's initial list
// does, and returns it.
func fillStore(tb testing.TB, k storeKind, pods []*corev1.Pod) cache.Indexer {
	s, err := k.new()
	if err != nil {
		tb.Fatal(err)
	}
	items := make([]any, len(pods))
	for i, p := range pods {
		items[i] = p
	}
	if err := s.Replace(items, "1"); err != nil {
		tb.Fatal(err)
	}
	return s
}

// BenchmarkStoreHeap fills a store with 10,000 Pods and reports the live heap
// it holds per Pod (objects or bytes, index, keys, dictionary and zstd state),
// and the time to fill it per Pod (for the encoded store: encoding and
// compressing). For client-go, the Pods stay decoded; for the others, the
// decoded Pods are garbage once stored, as an informer's are.
func BenchmarkStoreHeap(b *testing.B) {
	for _, shape := range []dataset.PodShape{dataset.PodsByWorkload, dataset.PodsUnique} {
		for _, k := range heapKinds {
			b.Run(fmt.Sprintf("%s/%s", shape, k.name), func(b *testing.B) {
				perPod, kept := retainedPerPod(b, k, shape)
				ops := 0
				var cpu time.Duration
				for b.Loop() {
					b.StopTimer()
					pods := storedPods(benchPods, shape)
					b.StartTimer()
					start := processCPU()
					fillStore(b, k, pods)
					cpu += processCPU() - start
					ops++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ops*benchPods), "ns/pod")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(ops*benchPods), "cpu-ns/pod")
				b.ReportMetric(perPod, "live-B/pod")
				if kept > 0 {
					b.ReportMetric(kept, "kept-B/pod")
				}
			})
		}
	}
}

// retainedPerPod returns the live heap a filled store holds per Pod, and for
// an encoded store the size of the kept bytes alone.
func retainedPerPod(b *testing.B, k storeKind, shape dataset.PodShape) (perPod, kept float64) {
	pods := storedPods(benchPods, shape)
	if k.name != clientGoKind.name {
		// The encoded stores keep bytes: the Pods are the caller's, so they
		// are counted before.
		before := liveHeap()
		s := fillStore(b, k, pods)
		after := liveHeap()
		runtime.KeepAlive(s)
		runtime.KeepAlive(pods)
		return float64(after-before) / benchPods, float64(s.(*encstore.Store).Stats().KeptBytes) / benchPods
	}
	// client-go keeps the Pods themselves: count them with the store.
	before := liveHeap()
	pods = storedPods(benchPods, shape)
	s := fillStore(b, k, pods)
	after := liveHeap()
	runtime.KeepAlive(s)
	return float64(after-before) / benchPods, 0
}

// BenchmarkStoreHeapHotCacheFull is BenchmarkStoreHeap's s2-dict store
// after every Pod was read once, so that the hot cache (4 MiB by default)
// holds all it can: the store's heap at its largest.
func BenchmarkStoreHeapHotCacheFull(b *testing.B) {
	k := encodedKind("s2-dict+hot", encstore.S2Dict, 0)
	pods := storedPods(benchPods, dataset.PodsByWorkload)
	before := liveHeap()
	s := fillStore(b, k, pods)
	for _, key := range s.ListKeys() {
		if _, _, err := s.GetByKey(key); err != nil {
			b.Fatal(err)
		}
	}
	after := liveHeap()
	runtime.KeepAlive(s)
	runtime.KeepAlive(pods)
	st := s.(*encstore.Store).Stats()
	for b.Loop() {
		// Nothing to time: the figure is the heap above.
	}
	b.ReportMetric(float64(after-before)/benchPods, "live-B/pod")
	b.ReportMetric(float64(st.HotBytes)/benchPods, "hot-B/pod")
	b.ReportMetric(float64(st.KeptBytes)/benchPods, "kept-B/pod")
}

// podsFixture is the benchmarks' 10,000 Pods, built once.
var podsFixture = sync.OnceValue(func() []*corev1.Pod { return storedPods(benchPods, dataset.PodsByWorkload) })

// filledStores are a client-go indexer and the encoded stores the read
// benchmarks use, filled with podsFixture once.
var filledStores = sync.OnceValues(func() (map[string]cache.Indexer, error) {
	kinds := []storeKind{
		clientGoKind,
		encodedKind("encoded-hot", encstore.S2Dict, 0),
		sharedKind,
		encodedKind("encoded-cold", encstore.S2Dict, -1),
		encodedKind("encoded-zstd-hot", encstore.ZstdDict, 0),
		encodedKind("encoded-zstd-cold", encstore.ZstdDict, -1),
	}
	out := map[string]cache.Indexer{}
	for _, k := range kinds {
		s, err := k.new()
		if err != nil {
			return nil, err
		}
		items := make([]any, 0, benchPods)
		for _, p := range podsFixture() {
			items = append(items, p.DeepCopy())
		}
		if err := s.Replace(items, "1"); err != nil {
			return nil, err
		}
		out[k.name] = s
	}
	return out, nil
})

func storeNamed(b *testing.B, name string) cache.Indexer {
	b.Helper()
	stores, err := filledStores()
	if err != nil {
		b.Fatal(err)
	}
	return stores[name]
}

func keyOf(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// latencies records the duration of each op, for percentiles.
type latencies []time.Duration

func (l latencies) report(b *testing.B, name string) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	at := func(q float64) float64 { return float64(l[int(q*float64(len(l)-1))].Nanoseconds()) }
	b.ReportMetric(at(0.5), name+"-p50-ns")
	b.ReportMetric(at(0.99), name+"-p99-ns")
}

// BenchmarkGet reads one Pod by key, in each way at once: each op does every
// variant once, on the same Pod, so that a machine's load, which drifts,
// weighs on all of them alike; each variant's latencies are reported as
// percentiles (<variant>-p50-ns, -p99-ns). The variants:
//
//   - client-go: client-go's store (a pointer to the shared Pod);
//   - client-go+deepcopy: the same and a DeepCopy, what a caller that wants
//     to own the Pod pays there;
//   - hot: the encoded store's hot cache (a DeepCopy of the cached Pod);
//   - hot-shared: the same with SharedReads (the cached Pod itself);
//   - cold-s2, cold-zstd: the encoded store without a hot cache (S2Dict, the
//     default, and ZstdDict): decompress and decode;
//   - decode-stripped: decoding the Pod's stripped protobuf bytes;
//   - decode-wire: decoding the Pod as the API server sends it
//     (managedFields and kubectl's last-applied annotation included), which
//     an informer pays for every object it receives.
func BenchmarkGet(b *testing.B) {
	pods := podsFixture()
	clientGo := storeNamed(b, "client-go")
	hot := storeNamed(b, "encoded-hot")
	hotShared := storeNamed(b, "encoded-hot-shared")
	coldS2 := storeNamed(b, "encoded-cold")
	coldZstd := storeNamed(b, "encoded-zstd-cold")
	const sample = 256
	stripped := make([][]byte, sample)
	wire := make([][]byte, sample)
	for i := range sample {
		var err error
		if stripped[i], err = pods[i*7919%len(pods)].Marshal(); err != nil {
			b.Fatal(err)
		}
		if wire[i], err = wirePod(b, i*7919%len(pods)).Marshal(); err != nil {
			b.Fatal(err)
		}
	}
	hotKeys := make([]string, 64)
	for i := range hotKeys {
		hotKeys[i] = keyOf(pods[i*97%len(pods)])
		for _, s := range []cache.Indexer{hot, hotShared} {
			if _, _, err := s.GetByKey(hotKeys[i]); err != nil { // warm
				b.Fatal(err)
			}
		}
	}
	names := []string{"client-go", "client-go+deepcopy", "hot", "cold-zstd", "cold-s2", "decode-stripped", "decode-wire", "hot-shared"}
	lat := make([]latencies, len(names))
	timed := func(v int, op func() error) {
		start := time.Now()
		err := op()
		lat[v] = append(lat[v], time.Since(start))
		if err != nil {
			b.Fatalf("%s: %v", names[v], err)
		}
	}
	get := func(s cache.Indexer, key string, copyOut bool) func() error {
		return func() error {
			obj, exists, err := s.GetByKey(key)
			if err == nil && !exists {
				err = fmt.Errorf("%s not found", key)
			}
			if err == nil && copyOut {
				_ = obj.(*corev1.Pod).DeepCopy()
			}
			return err
		}
	}
	unmarshal := func(data []byte) func() error {
		return func() error {
			var p corev1.Pod
			return p.Unmarshal(data)
		}
	}
	i := 0
	for b.Loop() {
		j := i % sample
		key := keyOf(pods[j*7919%len(pods)])
		timed(0, get(clientGo, key, false))
		timed(1, get(clientGo, key, true))
		timed(2, get(hot, hotKeys[i%len(hotKeys)], false))
		timed(3, get(coldZstd, key, false))
		timed(4, get(coldS2, key, false))
		timed(5, unmarshal(stripped[j]))
		timed(6, unmarshal(wire[j]))
		timed(7, get(hotShared, hotKeys[i%len(hotKeys)], false))
		i++
	}
	for v, name := range names {
		lat[v].report(b, name)
	}
}

// BenchmarkReconcile is what a reconcile reads: one Pod by key, then every Pod
// of its namespace (100 of the 10,000) through the namespace index.
func BenchmarkReconcile(b *testing.B) {
	pods := podsFixture()
	reconcile := func(b *testing.B, s cache.Indexer, copyOut bool) {
		i := 0
		cpu := startCPU()
		for b.Loop() {
			p := pods[i*7919%len(pods)]
			obj, exists, err := s.GetByKey(keyOf(p))
			if err != nil || !exists {
				b.Fatalf("GetByKey: exists %v, err %v", exists, err)
			}
			list, err := s.ByIndex(cache.NamespaceIndex, p.Namespace)
			if err != nil || len(list) != benchPods/namespaces {
				b.Fatalf("ByIndex: %d objects, err %v", len(list), err)
			}
			if copyOut {
				_ = obj.(*corev1.Pod).DeepCopy()
				for _, o := range list {
					_ = o.(*corev1.Pod).DeepCopy()
				}
			}
			i++
		}
		cpu.report(b, i)
	}
	b.Run("client-go", func(b *testing.B) { reconcile(b, storeNamed(b, "client-go"), false) })
	b.Run("client-go+deepcopy", func(b *testing.B) { reconcile(b, storeNamed(b, "client-go"), true) })
	b.Run("encoded", func(b *testing.B) { reconcile(b, storeNamed(b, "encoded-hot"), false) })
	b.Run("encoded-zstd", func(b *testing.B) { reconcile(b, storeNamed(b, "encoded-zstd-hot"), false) })
}

// BenchmarkListAll lists every Pod, as a controller that scans its whole cache
// does: client-go hands out 10,000 pointers, the encoded store decodes 10,000
// Pods. This is the encoded store's worst case.
func BenchmarkListAll(b *testing.B) {
	for _, name := range []string{"client-go", "encoded-hot", "encoded-zstd-hot"} {
		b.Run(name, func(b *testing.B) {
			s := storeNamed(b, name)
			ops := 0
			cpu := startCPU()
			for b.Loop() {
				if n := len(s.List()); n != benchPods {
					b.Fatalf("listed %d Pods", n)
				}
				ops++
			}
			cpu.report(b, ops)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ops*benchPods), "ns/pod")
		})
	}
}

// BenchmarkUpdate is the cost of storing one changed Pod in a store that holds
// the 10,000 (a watch event's MODIFIED): for client-go, putting a pointer in
// its map and index (the same few Pods, changed in place between updates,
// which only a benchmark may do); for the encoded stores, encoding,
// compressing and swapping the bytes, and the index values.
func BenchmarkUpdate(b *testing.B) {
	pods := podsFixture()
	const sample = 256
	changed := make([]*corev1.Pod, sample)
	for i := range changed {
		changed[i] = pods[i*7919%len(pods)].DeepCopy()
	}
	for _, name := range []string{"client-go", "encoded-cold", "encoded-zstd-cold"} {
		b.Run(name, func(b *testing.B) {
			s := storeNamed(b, name)
			i := 0
			cpu := startCPU()
			for b.Loop() {
				p := changed[i%sample]
				p.ResourceVersion = fmt.Sprint(100000 + i)
				if err := s.Update(p); err != nil {
					b.Fatal(err)
				}
				i++
			}
			cpu.report(b, i)
		})
	}
}

// BenchmarkRelist replaces the contents of a store holding the 10,000 Pods
// with a list of the same Pods, a tenth of them changed, as a re-list does.
// client-go's Replace builds a new map and index beside the old ones (its
// objects are the list's); the encoded store changes in place, encoding only
// the changed Pods. B/op is the garbage a re-list leaves, beyond the list.
func BenchmarkRelist(b *testing.B) {
	pods := podsFixture()
	for _, name := range []string{"client-go", "encoded-cold"} {
		b.Run(name, func(b *testing.B) {
			s := storeNamed(b, name)
			items := make([]any, len(pods))
			round := 0
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				round++
				for i, p := range pods {
					q := p.DeepCopy()
					if i%10 == 0 {
						q.ResourceVersion = fmt.Sprintf("%d-%d", round, i)
					}
					items[i] = q
				}
				runtime.GC() // the copies' garbage is the setup's, not the re-list's
				b.StartTimer()
				start := processCPU()
				if err := s.Replace(items, fmt.Sprint(round)); err != nil {
					b.Fatal(err)
				}
				cpu += processCPU() - start
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(round), "cpu-ns/op")
		})
	}
}
