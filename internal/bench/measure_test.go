package bench

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
)

// fakeInformer stands in for an informer: a store of objects of a known size,
// and a re-list that builds a whole new store before dropping the old one, as
// client-go does. It lets Measure's bookkeeping be checked exactly, without a
// server.
type fakeInformer struct {
	h       cache.ResourceEventHandler
	n, size int
	synced  atomic.Bool
	mu      sync.Mutex
	store   [][]byte
	wg      sync.WaitGroup
}

func (f *fakeInformer) fill() [][]byte {
	s := make([][]byte, f.n)
	for i := range s {
		s[i] = make([]byte, f.size)
		s[i][0] = 1 // touch it
	}
	return s
}

func (f *fakeInformer) start(ctx context.Context, env Env) (Cache, error) {
	f.h = env.Handler
	f.wg.Go(func() {
		time.Sleep(20 * time.Millisecond)
		s := f.fill()
		f.mu.Lock()
		f.store = s
		f.mu.Unlock()
		for range f.n {
			f.h.OnAdd(nil, true)
		}
		f.synced.Store(true)
	})
	return Cache{
		HasSynced: f.synced.Load,
		Len:       func() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.store) },
		Stop:      f.wg.Wait,
	}, nil
}

// relist is what the parent's 410 sets off.
func (f *fakeInformer) relist(ctx context.Context, index int) (int, error) {
	f.wg.Go(func() {
		time.Sleep(10 * time.Millisecond)
		s := f.fill() // the old store is still held here: the spike
		f.mu.Lock()
		f.store = s
		f.mu.Unlock()
		for range f.n {
			f.h.OnUpdate(nil, nil)
		}
	})
	return 1, nil
}

func TestMeasureWithFakeInformer(t *testing.T) {
	leakcheck.Check(t)
	f := &fakeInformer{n: 200, size: 64 << 10}
	plan := DefaultPlan()
	plan.Settle, plan.Idle = Duration(50*time.Millisecond), Duration(100*time.Millisecond)
	plan.SampleEvery = Duration(2 * time.Millisecond)
	plan.SeriesPoints = 50
	var events []string
	res, err := Measure(context.Background(), MeasureSpec{
		Mode:     Mode{Name: "fake/stream", Title: "fake", Streaming: true, Start: f.start},
		Config:   &rest.Config{Host: "http://127.0.0.1:1"},
		Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"},
		Plan:     plan,
		Relist:   f.relist,
		Events:   func(e Event) { events = append(events, e.Kind) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Objects != f.n {
		t.Errorf("Objects = %d, want %d", res.Objects, f.n)
	}
	// Each object is a 64 KiB slice plus its slice header in the store.
	if lo, hi := float64(f.size), float64(f.size)*1.1; res.BytesPerObject < lo || res.BytesPerObject > hi {
		t.Errorf("BytesPerObject = %.0f, want %.0f..%.0f", res.BytesPerObject, lo, hi)
	}
	if res.LiveHeap <= res.BaselineHeap {
		t.Errorf("LiveHeap %d not above the baseline %d", res.LiveHeap, res.BaselineHeap)
	}
	if res.InitialSync.PeakHeap < res.LiveHeap*9/10 {
		t.Errorf("initial peak %d below the live heap %d", res.InitialSync.PeakHeap, res.LiveHeap)
	}
	if len(res.Relists) != plan.Relists {
		t.Fatalf("%d re-lists, want %d", len(res.Relists), plan.Relists)
	}
	for _, rl := range res.Relists {
		if rl.Error != "" || rl.Updates != f.n || rl.WatchesEnded != 1 {
			t.Errorf("re-list %d: error %q, updates %d (want %d), watches ended %d (want 1)", rl.Index, rl.Error, rl.Updates, f.n, rl.WatchesEnded)
		}
		// Two stores of 12.5 MiB alive at once over one live store.
		if rl.Window.PeakRatio < 1.4 {
			t.Errorf("re-list %d: peak ratio %.2f, want above 1.4 (old and new store alive together)", rl.Index, rl.Window.PeakRatio)
		}
		if rl.Window.Probe.Count == 0 {
			t.Errorf("re-list %d: no probe samples", rl.Index)
		}
	}
	if res.Idle.Probe.Count < 10 {
		t.Errorf("idle window has %d probe samples, want at least 10", res.Idle.Probe.Count)
	}
	if res.ListPath.Library != "unknown" {
		t.Errorf("ListPath.Library = %q, want unknown", res.ListPath.Library)
	}
	if n := len(res.Series.Seconds); n < 3 || n > plan.SeriesPoints {
		t.Errorf("series has %d points, want 3..%d", n, plan.SeriesPoints)
	}
	var labels []string
	for _, m := range res.Markers {
		labels = append(labels, m.Label)
	}
	if got, want := strings.Join(labels, ","), "start,synced,410 #1,re-list #1 done,410 #2,re-list #2 done"; got != want {
		t.Errorf("markers = %s, want %s", got, want)
	}
	if got, want := strings.Join(events, ","), "syncing,synced,relist,relisted,relist,relisted"; got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
}

func TestMeasureRelistFailureIsRecorded(t *testing.T) {
	leakcheck.Check(t)
	f := &fakeInformer{n: 10, size: 1024}
	plan := DefaultPlan()
	plan.Relists = 1
	plan.Settle, plan.Idle = Duration(10*time.Millisecond), Duration(10*time.Millisecond)
	plan.RelistTimeout = Duration(50 * time.Millisecond)
	res, err := Measure(context.Background(), MeasureSpec{
		Mode:     Mode{Name: "fake/list", Start: f.start},
		Config:   &rest.Config{Host: "http://127.0.0.1:1"},
		Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"},
		Plan:     plan,
		// No watch to end: nothing re-lists, the wait times out.
		Relist: func(context.Context, int) (int, error) { return 0, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Relists) != 1 || !strings.Contains(res.Relists[0].Error, "timed out") {
		t.Errorf("re-lists = %+v, want one that timed out", res.Relists)
	}
}
