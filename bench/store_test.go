package bench_test

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// storeModes are ways of filling an informer's store with plain client-go:
// what each object costs once it is cached.
var storeModes = []struct {
	name     string
	metadata bool // decode PartialObjectMetadata, as a metadata-only informer does
	t        cache.TransformFunc
}{
	{"typed", false, nil},
	{"typed-strip-mf", false, bench.StripManagedFields},
	{"typed-strip-mf-la", false, bench.StripManagedFieldsAndLastApplied},
	{"metadata", true, nil},
	{"metadata-strip-mf", true, bench.StripManagedFields},
	// leanstore's stripping and sharing, applied as a client-go transform: what
	// the lean modes' objects cost in a store (leanstore's own list path, which
	// never decodes what it strips, is measured by cachebench).
	{"leanstore-typed-lean", false, leanstore.Transform(leanstore.WithStripLastApplied(), leanstore.WithSharing(true))},
	{"leanstore-metadata-strip-mf-la", true, leanstore.Transform(leanstore.WithStripLastApplied(), leanstore.WithInterning(false))},
	{"leanstore-metadata-lean", true, leanstore.Transform(leanstore.WithStripLastApplied(), leanstore.WithSharing(true))},
}

// metaSerializer speaks PartialObjectMetadataList in protobuf, the list a
// metadata-only informer receives.
var metaSerializer = func() kruntime.Serializer {
	s := kruntime.NewScheme()
	_ = metav1.AddMetaToScheme(s) // cannot fail: a fresh scheme, fixed types
	return protobuf.NewSerializer(s, s)
}()

// encodeFor encodes n Pods as the list a mode's informer receives.
func encodeFor(b *testing.B, metadata bool, n int) []byte {
	return encodeList(b, metadata, loadPods(b, n))
}

// encodeList encodes pods as the list a mode's informer receives.
func encodeList(b *testing.B, metadata bool, pods *corev1.PodList) []byte {
	if !metadata {
		return encode(b, encodings[0].s, pods)
	}
	list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"}}
	for _, p := range pods.Items {
		list.Items = append(list.Items, metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: p.ObjectMeta})
	}
	var buf []byte
	if err := metaSerializer.Encode(list, &sliceWriter{&buf}); err != nil {
		b.Fatal(err)
	}
	return buf
}

// fill decodes a protobuf list and fills an indexer as an informer does: the
// store holds pointers into the list's items (meta.ExtractList), transformed.
func fill(b *testing.B, data []byte, metadata bool, t cache.TransformFunc) cache.Indexer {
	var items []any
	var rv string
	if metadata {
		list := &metav1.PartialObjectMetadataList{}
		if _, _, err := metaSerializer.Decode(data, nil, list); err != nil {
			b.Fatal(err)
		}
		for i := range list.Items {
			items = append(items, &list.Items[i])
		}
		rv = list.ResourceVersion
	} else {
		list := &corev1.PodList{}
		if _, _, err := encodings[0].s.Decode(data, nil, list); err != nil {
			b.Fatal(err)
		}
		for i := range list.Items {
			items = append(items, &list.Items[i])
		}
		rv = list.ResourceVersion
	}
	if t != nil {
		for i, o := range items {
			var err error
			if items[i], err = t(o); err != nil {
				b.Fatal(err)
			}
		}
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := idx.Replace(items, rv); err != nil {
		b.Fatal(err)
	}
	return idx
}

func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// retained fills a store once and returns the live heap it holds per object.
// It runs apart from the timed loop, whose last store could still be reachable
// from the benchmark's frame while it measures.
func retained(b *testing.B, data []byte, metadata bool, t cache.TransformFunc, n int) float64 {
	before := liveHeap()
	idx := fill(b, data, metadata, t)
	after := liveHeap()
	runtime.KeepAlive(idx)
	if after < before {
		b.Fatalf("live heap fell from %d to %d while holding a store", before, after)
	}
	return float64(after-before) / float64(n)
}

// BenchmarkStore fills a store from a protobuf list in each mode and reports
// the live heap per cached object after a GC: the steady-state cost that
// cachebench's live heap per object measures in a whole process.
func BenchmarkStore(b *testing.B) {
	for _, m := range storeModes {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/pods=%d", m.name, n), func(b *testing.B) {
				data := encodeFor(b, m.metadata, n)
				perObject := retained(b, data, m.metadata, m.t, n)
				ops := 0
				for b.Loop() {
					if len(fill(b, data, m.metadata, m.t).ListKeys()) != n {
						b.Fatal("store not filled")
					}
					ops++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ops*n), "ns/object")
				b.ReportMetric(perObject, "live-B/object")
			})
		}
	}
}

// BenchmarkTransform is the CPU cost of the strip transforms per object. Each
// op strips a batch of decoded Pods; what was stripped is put back between
// ops, off the clock, so that every op does the full work.
func BenchmarkTransform(b *testing.B) {
	const n = 1000
	list := &corev1.PodList{}
	if _, _, err := encodings[0].s.Decode(encodeFor(b, false, n), nil, list); err != nil {
		b.Fatal(err)
	}
	type saved struct {
		mf []metav1.ManagedFieldsEntry
		la string
	}
	orig := make([]saved, n)
	for i, p := range list.Items {
		orig[i] = saved{p.ManagedFields, p.Annotations[lastApplied]}
	}
	for _, tc := range []struct {
		name string
		f    cache.TransformFunc
	}{
		{"strip-mf", bench.StripManagedFields},
		{"strip-mf-la", bench.StripManagedFieldsAndLastApplied},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ops := 0
			for b.Loop() {
				for i := range list.Items {
					if _, err := tc.f(&list.Items[i]); err != nil {
						b.Fatal(err)
					}
				}
				ops++
				b.StopTimer()
				for i := range list.Items {
					p := &list.Items[i]
					p.ManagedFields = orig[i].mf
					if p.Annotations == nil {
						p.Annotations = map[string]string{}
					}
					p.Annotations[lastApplied] = orig[i].la
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ops*n), "ns/object")
		})
	}
}

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// sharingModes are the steps of leanstore's interning and sharing, on top of
// stripping managedFields and the last-applied annotation: what each step
// saves per cached object, and what it costs in time. Interning is on by
// default; the first step turns it off.
var sharingModes = []struct {
	name     string
	metadata bool
	t        func() cache.TransformFunc // a new function per fill: its own table
}{
	{"typed-strip-mf-la", false, func() cache.TransformFunc {
		return leanstore.Transform(leanstore.WithStripLastApplied(), leanstore.WithInterning(false))
	}},
	{"typed-intern", false, func() cache.TransformFunc {
		return leanstore.Transform(leanstore.WithStripLastApplied(), leanstore.WithInterning(true))
	}},
	{"typed-share", false, func() cache.TransformFunc {
		return leanstore.Transform(leanstore.WithStripLastApplied(), leanstore.WithSharing(true))
	}},
	{"typed-share-guard", false, func() cache.TransformFunc {
		return leanstore.Transform(leanstore.WithStripLastApplied(), leanstore.WithSharing(true), leanstore.WithMutationGuard(true))
	}},
	{"metadata-strip-mf-la", true, func() cache.TransformFunc {
		return leanstore.Transform(leanstore.WithStripLastApplied(), leanstore.WithInterning(false))
	}},
	{"metadata-intern", true, func() cache.TransformFunc {
		return leanstore.Transform(leanstore.WithStripLastApplied(), leanstore.WithInterning(true))
	}},
	{"metadata-share", true, func() cache.TransformFunc {
		return leanstore.Transform(leanstore.WithStripLastApplied(), leanstore.WithSharing(true))
	}},
	{"metadata-share-guard", true, func() cache.TransformFunc {
		return leanstore.Transform(leanstore.WithStripLastApplied(), leanstore.WithSharing(true), leanstore.WithMutationGuard(true))
	}},
}

// variedPods returns n Pods of the fixture's eight apps whose status varies
// from Pod to Pod as the seeded dataset's does (pod IP, host IP, container IDs,
// start times, restart counts: pkg/testkit/dataset's kubelet-like status), and with a
// resourceVersion each. loadPods's copies differ only in name and uid, which
// makes sharing look better than it is on a real cache.
func variedPods(b *testing.B, n int) *corev1.PodList {
	pods := loadPods(b, n)
	byApp := map[string]int{}
	spec := dataset.Spec{Name: "standard", Namespace: "bench"}
	now := time.Date(2026, 11, 29, 12, 24, 22, 0, time.UTC)
	for i := range pods.Items {
		p := &pods.Items[i]
		// Pod j of the dataset belongs to the same app as p, so its status
		// names p's containers and images.
		app := p.Labels["app.kubernetes.io/name"]
		j, ok := byApp[app]
		if !ok {
			for j = 0; dataset.NewPod(spec, j, now).Labels["app.kubernetes.io/name"] != app; j++ {
				if j > 64 {
					b.Fatalf("no dataset pod of app %q", app)
				}
			}
			byApp[app] = j
		}
		p.Status = dataset.NewPod(spec, j+8*i, now).Status
		p.ResourceVersion = fmt.Sprint(1000 + i)
	}
	return pods
}

// BenchmarkSharing fills a store with Pods whose status varies per Pod, in each
// step of interning and sharing, and reports the live heap per cached object
// (store and the transform's table of canonical values included) and the time
// per object (decoding, transform and store).
func BenchmarkSharing(b *testing.B) {
	for _, m := range sharingModes {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/pods=%d", m.name, n), func(b *testing.B) {
				data := encodeList(b, m.metadata, variedPods(b, n))
				perObject := retainedWith(b, data, m.metadata, m.t, n)
				ops := 0
				for b.Loop() {
					if len(fill(b, data, m.metadata, m.t()).ListKeys()) != n {
						b.Fatal("store not filled")
					}
					ops++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ops*n), "ns/object")
				b.ReportMetric(perObject, "live-B/object")
			})
		}
	}
}

// retainedWith is retained for a transform made anew, after the heap is
// measured: the table it builds counts as what the store holds.
func retainedWith(b *testing.B, data []byte, metadata bool, newT func() cache.TransformFunc, n int) float64 {
	before := liveHeap()
	t := newT()
	idx := fill(b, data, metadata, t)
	after := liveHeap()
	runtime.KeepAlive(idx)
	runtime.KeepAlive(t)
	if after < before {
		b.Fatalf("live heap fell from %d to %d while holding a store", before, after)
	}
	return float64(after-before) / float64(n)
}
