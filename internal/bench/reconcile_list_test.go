package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
)

// copyingRead is a fake reader that copies every stored object, as
// controller-runtime's client deep-copies each object it lists.
func (f *fakeInformer) copyingRead(_ context.Context, held func()) (int, error) {
	f.mu.Lock()
	out := make([][]byte, len(f.store))
	for i, b := range f.store {
		out[i] = slices.Clone(b)
	}
	f.mu.Unlock()
	held()
	return len(out), nil
}

// TestMeasureReconcileList checks the reconcile-list figures on a reader of
// known cost: a copy of every object, 64 KiB each.
func TestMeasureReconcileList(t *testing.T) {
	leakcheck.Check(t)
	f := &fakeInformer{n: 200, size: 64 << 10}
	plan := DefaultPlan()
	plan.Settle, plan.Idle = Duration(50*time.Millisecond), Duration(100*time.Millisecond)
	plan.SampleEvery = Duration(2 * time.Millisecond)
	plan.Relists, plan.Churn = 1, []float64{0}
	var events []Event
	res, err := Measure(context.Background(), MeasureSpec{
		Mode: Mode{Name: "fake/stream", Title: "fake", Streaming: true, Start: func(ctx context.Context, env Env) (Cache, error) {
			c, err := f.start(ctx, env)
			c.ReconcileList = f.copyingRead
			return c, err
		}},
		Config:    &rest.Config{Host: "http://127.0.0.1:1"},
		Resources: podsRef,
		Plan:      plan,
		Relist:    f.relist,
		Events:    func(e Event) { events = append(events, e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	l := res.ReconcileList
	if l == nil {
		t.Fatal("no reconcile list measured for a mode with a reader")
	}
	if l.Error != "" || l.Objects != f.n {
		t.Fatalf("reconcile list: %d objects, error %q; want %d", l.Objects, l.Error, f.n)
	}
	// The copies, plus the slice that holds them and little else.
	if lo, hi := float64(f.size), float64(f.size)*1.1; l.AllocatedPerObject() < lo || l.AllocatedPerObject() > hi {
		t.Errorf("allocated %.0f bytes per object, want %.0f..%.0f", l.AllocatedPerObject(), lo, hi)
	}
	// The cache and its copy are alive together when held runs.
	if min := res.LiveHeap + uint64(f.n*f.size)*9/10; l.HeldHeap < min {
		t.Errorf("held heap %d, want at least the live heap and the copies, %d", l.HeldHeap, min)
	}
	if l.Window.PeakRatio < 1.8 || l.Window.PeakHeap < l.HeldHeap {
		t.Errorf("reconcile-list window peak %d (%.2fx live), want at least the held heap %d, about 2x", l.Window.PeakHeap, l.Window.PeakRatio, l.HeldHeap)
	}
	if l.Window.EndSeconds < l.Window.StartSeconds || l.Window.StartSeconds < res.Idle.EndSeconds {
		t.Errorf("reconcile-list window %.3f..%.3f s, want it after the idle window (ends %.3f s)", l.Window.StartSeconds, l.Window.EndSeconds, res.Idle.EndSeconds)
	}
	// The re-list starts from the heap before the copies: they were collected.
	if rl := res.Relists[0]; rl.Window.PeakRatio > 2.5 {
		t.Errorf("re-list peak %.2fx live: the reconcile list's copies were not collected before it", rl.Window.PeakRatio)
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Kind)
		if e.Kind == "listed" && (e.Objects != f.n || e.AllocatedBytes != l.AllocatedBytes) {
			t.Errorf("listed event %+v, want %d objects and %d bytes", e, f.n, l.AllocatedBytes)
		}
	}
	if got, want := strings.Join(kinds, ","), "syncing,synced,listed,relist,relisted"; got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
	if !slices.ContainsFunc(res.Markers, func(m Marker) bool { return m.Label == "reconcile list" }) {
		t.Errorf("no reconcile list marker in %+v", res.Markers)
	}
}

// TestMeasureWithoutReader checks that a mode with no reader has no
// reconcile-list figures rather than zeros.
func TestMeasureWithoutReader(t *testing.T) {
	leakcheck.Check(t)
	f := &fakeInformer{n: 10, size: 1 << 10}
	plan := DefaultPlan()
	plan.Settle, plan.Idle = Duration(20*time.Millisecond), Duration(20*time.Millisecond)
	plan.Relists, plan.Churn = 0, nil
	res, err := Measure(context.Background(), MeasureSpec{
		Mode:   Mode{Name: "fake/stream", Title: "fake", Streaming: true, Start: f.start},
		Config: &rest.Config{Host: "http://127.0.0.1:1"}, Resources: podsRef, Plan: plan, Relist: f.relist,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ReconcileList != nil {
		t.Errorf("reconcile list %+v for a mode without a reader", *res.ReconcileList)
	}
}

// TestListerRead checks the lister read client-go's and leanstore's modes
// use: every object, handed out without a copy.
func TestListerRead(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for i := range 1000 {
		if err := idx.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("p", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	read := listerRead(idx)
	// The heap's allocation count is the process's: the runtime counts a
	// small object's bytes when a whole span is handed to a P, and the test
	// binary's other goroutines allocate too. The least of several reads is
	// this read's own cost.
	allocated := uint64(math.MaxUint64)
	for range 5 {
		heldCalls := 0
		a0 := heapAllocs()
		n, err := read(context.Background(), func() { heldCalls++ })
		allocated = min(allocated, heapAllocs()-a0)
		if err != nil || n != 1000 || heldCalls != 1 {
			t.Fatalf("read %d objects, held called %d times, error %v; want 1000, once, none", n, heldCalls, err)
		}
	}
	// Pointers to the cached Pods: the indexer's slice and a slice of
	// interfaces grown by append, about 60 bytes per object. A copy of each
	// Pod would cost its struct, over 500 bytes.
	if allocated > 200*1000 {
		t.Errorf("a lister read of 1000 Pods allocated at least %d bytes: it copies objects", allocated)
	}
}

// TestJoinedReconcileList checks that a process caching several resources
// reads them all, with every object held together when held runs.
func TestJoinedReconcileList(t *testing.T) {
	var open []string // resources whose objects are still referenced
	reader := func(name string, n int, err error) func(context.Context, func()) (int, error) {
		return func(_ context.Context, held func()) (int, error) {
			open = append(open, name)
			held()
			open = slices.DeleteFunc(open, func(s string) bool { return s == name })
			return n, err
		}
	}
	var atHeld []string
	held := func() { atHeld = slices.Clone(open) }
	c := joined([]Cache{{ReconcileList: reader("pods", 3, nil)}, {ReconcileList: reader("secrets", 4, nil)}})
	n, err := c.ReconcileList(context.Background(), held)
	if err != nil || n != 7 || !slices.Equal(atHeld, []string{"pods", "secrets"}) {
		t.Errorf("read %d objects (error %v), held with %v; want 7, with pods and secrets", n, err, atHeld)
	}

	boom := errors.New("boom")
	c = joined([]Cache{{ReconcileList: reader("pods", 3, nil)}, {ReconcileList: reader("secrets", 0, boom)}})
	if _, err := c.ReconcileList(context.Background(), held); !errors.Is(err, boom) {
		t.Errorf("a failed read of the second resource gave %v, want boom", err)
	}

	if c := joined([]Cache{{ReconcileList: reader("pods", 3, nil)}, {}}); c.ReconcileList != nil {
		t.Error("a joined cache with a resource that has no reader has a reader")
	}
}
