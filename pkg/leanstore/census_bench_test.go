package leanstore

import (
	"fmt"
	"runtime"
	rtmetrics "runtime/metrics"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/shrink"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

// BenchmarkCensusAccuracy fills an informer store (client-go's indexer, with the
// namespace index) with dataset Pods stripped as each leanstore mode strips them,
// measures the heap they take (live heap after GC, before and after) and compares
// it with the census estimate. Reported: measured and estimated bytes per object
// and estimate/measured.
//
//	go test -run '^$' -bench CensusAccuracy -benchtime 1x ./pkg/leanstore/
func BenchmarkCensusAccuracy(b *testing.B) {
	const n = 5000
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	spec := dataset.Spec{Name: "standard", Namespace: "bench"}
	for _, tc := range []struct {
		name string
		s    shrink.Pipeline
	}{
		{"strip-mf", shrink.Pipeline{Config: shrink.Config{ManagedFields: true}}},
		{"strip-mf-la", shrink.Pipeline{Config: shrink.Config{ManagedFields: true, Annotations: map[string]bool{LastAppliedAnnotation: true}}}},
		{"strip-mf-la-intern", shrink.Pipeline{Config: shrink.Config{ManagedFields: true, Annotations: map[string]bool{LastAppliedAnnotation: true}, Intern: true}}},
		{"strip-mf-la-share", shrink.Pipeline{Config: shrink.Config{ManagedFields: true, Annotations: map[string]bool{LastAppliedAnnotation: true}, Share: true}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
				before := liveHeap()
				for i := range n {
					obj, err := tc.s.Apply(dataset.NewPod(spec, i, now), schema.GroupResource{Resource: "pods"})
					if err != nil {
						b.Fatal(err)
					}
					if err := store.Add(obj); err != nil {
						b.Fatal(err)
					}
				}
				measured := float64(liveHeap()-before) / n
				c := censusOf(store)
				b.ReportMetric(measured, "B/object-measured")
				b.ReportMetric(c.BytesPerObject, "B/object-estimated")
				b.ReportMetric(c.BytesPerObject/measured, "estimate/measured")
				runtime.KeepAlive(store)
				if r := c.BytesPerObject / measured; r < 0.8 || r > 1.2 {
					b.Errorf("%s: census estimates %.0f B/object, measured %.0f (%s off, more than 20%%)", tc.name, c.BytesPerObject, measured, fmt.Sprintf("%+.0f%%", (r-1)*100))
				}
			}
		})
	}
}
