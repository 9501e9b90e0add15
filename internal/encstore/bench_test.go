package encstore_test

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"

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
		return encstore.New(encstore.Options{Codec: newPodCodec(), Indexers: namespaceIndex, Compression: c, HotCacheBytes: hot})
	}}
}

var clientGoKind = storeKind{"client-go", func() (cache.Indexer, error) {
	return cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, namespaceIndex), nil
}}

var heapKinds = []storeKind{
	clientGoKind,
	encodedKind("plain", encstore.NoCompression, -1),
	encodedKind("zstd", encstore.Zstd, -1),
	encodedKind("zstd-dict", encstore.ZstdDict, -1),
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
				perPod := retainedPerPod(b, k, shape)
				ops := 0
				for b.Loop() {
					b.StopTimer()
					pods := storedPods(benchPods, shape)
					b.StartTimer()
					fillStore(b, k, pods)
					ops++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ops*benchPods), "ns/pod")
				b.ReportMetric(perPod, "live-B/pod")
			})
		}
	}
}

func retainedPerPod(b *testing.B, k storeKind, shape dataset.PodShape) float64 {
	pods := storedPods(benchPods, shape)
	if k.name != clientGoKind.name {
		// The encoded stores keep bytes: the Pods are the caller's, so they
		// are counted before.
		before := liveHeap()
		s := fillStore(b, k, pods)
		after := liveHeap()
		runtime.KeepAlive(s)
		runtime.KeepAlive(pods)
		return float64(after-before) / benchPods
	}
	// client-go keeps the Pods themselves: count them with the store.
	before := liveHeap()
	pods = storedPods(benchPods, shape)
	s := fillStore(b, k, pods)
	pods = nil
	after := liveHeap()
	runtime.KeepAlive(s)
	return float64(after-before) / benchPods
}
