package bench

import (
	"context"
	"runtime"
	"runtime/metrics"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/profile"
)

// ReconcileList is one read of every cached object through the mode's
// reader, as a reconcile that lists them all makes it: client-go's and
// leanstore's listers hand out the cached objects themselves, while
// controller-runtime's client deep-copies each one unless
// UnsafeDisableDeepCopy, which is the cost this measures.
type ReconcileList struct {
	// Objects is how many objects the read returned.
	Objects int `json:"objects"`
	// Seconds is how long the read took.
	Seconds float64 `json:"seconds"`
	// AllocatedBytes is what the read allocated on the heap (runtime/metrics
	// /gc/heap/allocs:bytes before and after).
	AllocatedBytes uint64 `json:"allocatedBytes"`
	// HeldHeap is the heap (live and unswept objects) at the end of the read,
	// while everything read was still referenced.
	HeldHeap uint64 `json:"heldHeapBytes"`
	// Error is set when the read failed.
	Error string `json:"error,omitempty"`
	// Window covers the read; its PeakHeap is the highest of the samples and
	// HeldHeap, its PeakRatio that over the live heap after the sync.
	Window Window `json:"window"`
}

// AllocatedPerObject is AllocatedBytes divided by the objects read.
func (l ReconcileList) AllocatedPerObject() float64 {
	if l.Objects == 0 {
		return 0
	}
	return float64(l.AllocatedBytes) / float64(l.Objects)
}

// listTimes are the edges of a window (the sync, the idle window, a reconcile
// list, a re-list, ...), kept until the measurement ends and its windows are
// computed.
type listTimes struct {
	t0, t1     time.Duration
	rt0, rt1   profile.RuntimeSnapshot
	cpu0, cpu1 time.Duration
	// forced0 and forced1 count the collections the caches had forced
	// (Cache.HeapBound) at the edges.
	forced0, forced1 int
}

// measureReconcileList reads every object of c once through its reader, then
// collects the garbage, so that the re-lists after it start from the same
// heap as in a mode without a reader.
func measureReconcileList(ctx context.Context, c Cache, since func() time.Duration) (ReconcileList, listTimes) {
	var (
		l  ReconcileList
		tm listTimes
	)
	tm.rt0, tm.cpu0, tm.t0 = profile.ReadRuntime(), selfCPU(), since()
	a0 := heapAllocs()
	n, err := c.ReconcileList(ctx, func() { l.HeldHeap = heapObjects() })
	a1 := heapAllocs()
	tm.t1, tm.rt1, tm.cpu1 = since(), profile.ReadRuntime(), selfCPU()
	l.Objects, l.Seconds, l.AllocatedBytes = n, (tm.t1 - tm.t0).Seconds(), a1-a0
	if err != nil {
		l.Error = err.Error()
	}
	runtime.GC()
	return l, tm
}

// heapAllocs reads /gc/heap/allocs:bytes, the bytes allocated on the heap
// since the process started.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// listerRead is a Cache.ReconcileList over an informer's indexer: what a
// generated lister's List(labels.Everything()) does, handing out the cached
// objects themselves.
func listerRead(indexer cache.Indexer) func(context.Context, func()) (int, error) {
	return func(_ context.Context, held func()) (int, error) {
		var out []any
		err := cache.ListAll(indexer, labels.Everything(), func(m any) { out = append(out, m) })
		held()
		return len(out), err
	}
}
