package bench_test

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// sizes are the list lengths the benchmarks sweep: the cost per object should
// not depend on it (a cache's cost is linear).
var sizes = []int{100, 1000}

// encodings are the two wire formats a typed client can ask for.
var encodings = []struct {
	name string
	s    kruntime.Serializer
}{
	{"protobuf", protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)},
	{"json", json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{})},
}

func encode(b *testing.B, s kruntime.Serializer, list *corev1.PodList) []byte {
	b.Helper()
	var buf []byte
	w := &sliceWriter{&buf}
	if err := s.Encode(list, w); err != nil {
		b.Fatal(err)
	}
	return buf
}

type sliceWriter struct{ b *[]byte }

func (w *sliceWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }

// allocatedBytes is the heap allocated so far by the process.
func allocatedBytes() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// BenchmarkDecodePodList decodes a PodList as a reflector's LIST does, and
// reports the wire size and the bytes allocated per object: the transient cost
// a list response adds on top of the store.
func BenchmarkDecodePodList(b *testing.B) {
	for _, enc := range encodings {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/pods=%d", enc.name, n), func(b *testing.B) {
				data := encode(b, enc.s, loadPods(b, n))
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				before := allocatedBytes()
				ops := 0
				for b.Loop() {
					into := &corev1.PodList{}
					if _, _, err := enc.s.Decode(data, nil, into); err != nil {
						b.Fatal(err)
					}
					if len(into.Items) != n {
						b.Fatalf("decoded %d pods, want %d", len(into.Items), n)
					}
					ops++
				}
				b.ReportMetric(float64(allocatedBytes()-before)/float64(ops*n), "alloc-B/object")
				b.ReportMetric(float64(len(data))/float64(n), "wire-B/object")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ops*n), "ns/object")
			})
		}
	}
}
