package bench

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
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
	// changes, when set, are what the parent writes before re-list k (from 1).
	changes func(k int) dataset.Changes
	// diffOnly makes the fake deliver only the changes and report its lists,
	// as leanstore does; missing holds back that many updates.
	diffOnly bool
	missing  int
	lists    atomic.Int64
	// forced counts collections "forced" by the fake's lists: two per list,
	// reported as a heap bound does.
	forced atomic.Int64
}

func (f *fakeInformer) fill() [][]byte {
	f.forced.Add(2)
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
	c := Cache{
		HasSynced: f.synced.Load,
		Len:       func() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.store) },
		HeapBound: func() (int, string) { return int(f.forced.Load()), "" },
		Stop:      f.wg.Wait,
	}
	if f.diffOnly {
		c.Lists = func() int { return int(f.lists.Load()) }
	}
	return c, nil
}

// relist is what the parent's 410 sets off, after writing the changes.
func (f *fakeInformer) relist(ctx context.Context, index int) (RelistAnswer, error) {
	var ch dataset.Changes
	if f.changes != nil {
		ch = f.changes(index)
	}
	f.wg.Go(func() {
		time.Sleep(10 * time.Millisecond)
		s := f.fill() // the old store is still held here: the spike
		f.mu.Lock()
		old := len(f.store)
		f.store = s[:len(s)-ch.Deleted+ch.Created]
		f.mu.Unlock()
		f.n = len(f.store)
		if f.diffOnly {
			f.lists.Add(1)
			for range ch.Updated - f.missing {
				f.h.OnUpdate(nil, nil)
			}
		} else {
			for range old - ch.Deleted {
				f.h.OnUpdate(nil, nil)
			}
		}
		for range ch.Created {
			f.h.OnAdd(nil, false)
		}
		for range ch.Deleted {
			f.h.OnDelete(nil)
		}
	})
	return RelistAnswer{Ended: 1, Changes: ch}, nil
}

var podsRef = []ResourceRef{{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}}

func TestMeasureWithFakeInformer(t *testing.T) {
	leakcheck.Check(t)
	f := &fakeInformer{n: 200, size: 64 << 10}
	plan := DefaultPlan()
	plan.Settle, plan.Idle = Duration(50*time.Millisecond), Duration(100*time.Millisecond)
	plan.SampleEvery = Duration(2 * time.Millisecond)
	plan.SeriesPoints = 50
	var events []string
	plan.Churn = []float64{0, 0}
	res, err := Measure(context.Background(), MeasureSpec{
		Mode:      Mode{Name: "fake/stream", Title: "fake", Streaming: true, Start: f.start},
		Config:    &rest.Config{Host: "http://127.0.0.1:1"},
		Resources: podsRef,
		Plan:      plan,
		Relist:    f.relist,
		Events:    func(e Event) { events = append(events, e.Kind) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Objects != f.n {
		t.Errorf("Objects = %d, want %d", res.Objects, f.n)
	}
	// Each object is a 64 KiB slice plus its slice header in the store; what
	// of the baseline dies meanwhile (the runtime's and the test's own
	// objects, some tens of KB) counts against it.
	if lo, hi := float64(f.size)*0.99, float64(f.size)*1.1; res.BytesPerObject < lo || res.BytesPerObject > hi {
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
		if rl.Error != "" || rl.Updates != f.n || rl.Delivered != (Events{Updates: f.n}) || rl.WatchesEnded != 1 {
			t.Errorf("re-list %d: error %q, updates %d, delivered %+v (want %d updates), watches ended %d (want 1)",
				rl.Index, rl.Error, rl.Updates, rl.Delivered, f.n, rl.WatchesEnded)
		}
		if rl.Unchanged() != f.n {
			t.Errorf("re-list %d: %d updates of unchanged objects, want %d", rl.Index, rl.Unchanged(), f.n)
		}
		if rl.Window.CPUSeconds <= 0 {
			t.Errorf("re-list %d: %v CPU seconds, want some", rl.Index, rl.Window.CPUSeconds)
		}
		// Two stores of 12.5 MiB alive at once over one live store.
		if rl.Window.PeakRatio < 1.4 {
			t.Errorf("re-list %d: peak ratio %.2f, want above 1.4 (old and new store alive together)", rl.Index, rl.Window.PeakRatio)
		}
		if rl.Window.Probe.Count == 0 {
			t.Errorf("re-list %d: no probe samples", rl.Index)
		}
		if rl.Window.ForcedGCs != 2 {
			t.Errorf("re-list %d: %d forced collections, want the 2 of its list", rl.Index, rl.Window.ForcedGCs)
		}
		if s := rl.Window.Sampling; s.Samples == 0 || s.LongestGapMs <= 0 {
			t.Errorf("re-list %d: sampling %+v, want samples and their longest gap", rl.Index, s)
		}
	}
	if res.InitialSync.CPUSeconds <= 0 || res.InitialSync.CPUSeconds > res.InitialSync.EndSeconds*float64(runtime.NumCPU()) {
		t.Errorf("sync CPU %v s in a window of %v s", res.InitialSync.CPUSeconds, res.InitialSync.EndSeconds)
	}
	if res.Started.IsZero() {
		t.Error("Started is not set")
	}
	if res.InitialSync.ForcedGCs != 2 || res.Whole.ForcedGCs != 2+2*plan.Relists || res.Idle.ForcedGCs != 0 {
		t.Errorf("forced collections: sync %d, idle %d, whole %d; want 2, 0, %d",
			res.InitialSync.ForcedGCs, res.Idle.ForcedGCs, res.Whole.ForcedGCs, 2+2*plan.Relists)
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
	plan.Churn = []float64{0}
	res, err := Measure(context.Background(), MeasureSpec{
		Mode:      Mode{Name: "fake/list", Start: f.start},
		Config:    &rest.Config{Host: "http://127.0.0.1:1"},
		Resources: podsRef,
		Plan:      plan,
		// No watch to end: nothing re-lists, the wait times out.
		Relist: func(context.Context, int) (RelistAnswer, error) { return RelistAnswer{}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Relists) != 1 || !strings.Contains(res.Relists[0].Error, "timed out") {
		t.Errorf("re-lists = %+v, want one that timed out", res.Relists)
	}
}

// TestMeasureChurn checks the bookkeeping of re-lists with changes: a library
// that delivers an update per object (client-go) and one that delivers only the
// changes and reports its lists (leanstore), and a re-list that loses changes.
func TestMeasureChurn(t *testing.T) {
	leakcheck.Check(t)
	defer func(d time.Duration) { deliverWait = d }(deliverWait)
	deliverWait = 300 * time.Millisecond
	changes := func(k int) dataset.Changes {
		return []dataset.Changes{{}, {Updated: 20, Created: 2, Deleted: 2}, {Updated: 90, Created: 10, Deleted: 10}}[k-1]
	}
	for _, tc := range []struct {
		name      string
		diffOnly  bool
		missing   int
		unchanged []int // per re-list
		wantErr   bool
	}{
		{"every object", false, 0, []int{100, 78, 0}, false},
		{"changes only", true, 0, []int{0, 0, 0}, false},
		{"changes lost", true, 5, []int{0, 0, 0}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeInformer{n: 100, size: 1024, changes: changes, diffOnly: tc.diffOnly, missing: tc.missing}
			plan := DefaultPlan()
			plan.Relists, plan.Churn = 3, []float64{0, 0.2, 1}
			plan.Settle, plan.Idle = Duration(20*time.Millisecond), Duration(20*time.Millisecond)
			res, err := Measure(context.Background(), MeasureSpec{
				Mode:      Mode{Name: "fake/stream", Streaming: true, Start: f.start},
				Config:    &rest.Config{Host: "http://127.0.0.1:1"},
				Resources: podsRef,
				Plan:      plan,
				Relist:    f.relist,
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, rl := range res.Relists {
				ch := changes(i + 1)
				if rl.Churn != plan.Churn[i] || rl.Changes != ch {
					t.Errorf("re-list %d: churn %v, changes %+v; want %v, %+v", rl.Index, rl.Churn, rl.Changes, plan.Churn[i], ch)
				}
				if rl.Delivered.Adds != ch.Created || rl.Delivered.Deletes != ch.Deleted {
					t.Errorf("re-list %d: delivered %+v for %+v", rl.Index, rl.Delivered, ch)
				}
				if got := rl.Unchanged(); got != tc.unchanged[i] {
					t.Errorf("re-list %d: %d updates of unchanged objects, want %d", rl.Index, got, tc.unchanged[i])
				}
				lost := tc.missing > 0 && ch.Updated > 0
				if (rl.Error != "") != lost || (rl.Missed() > 0) != lost {
					t.Errorf("re-list %d: error %q, missed %d; want an error %v", rl.Index, rl.Error, rl.Missed(), lost)
				}
			}
		})
	}
}

// TestTrafficHold checks that list-path requests wait while held and go once
// released, and that other requests are not held.
func TestTrafficHold(t *testing.T) {
	leakcheck.Check(t)
	tr := newTraffic(time.Now(), "pods")
	var sent atomic.Int64
	rt := tr.wrap(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent.Add(1)
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}"))}, nil
	}))
	get := func(path string) {
		req, _ := http.NewRequest(http.MethodGet, "http://x"+path, nil)
		if resp, err := rt.RoundTrip(req); err == nil {
			_ = resp.Body.Close()
		}
	}
	tr.hold()
	done := make(chan struct{})
	go func() { get("/api/v1/namespaces/a/pods?watch=true"); close(done) }()
	get("/api/v1/namespaces/a/configmaps") // another resource: not held
	time.Sleep(50 * time.Millisecond)
	if n := sent.Load(); n != 1 {
		t.Fatalf("%d requests sent while held, want only the configmaps one", n)
	}
	tr.release()
	<-done
	if n := sent.Load(); n != 2 {
		t.Fatalf("%d requests sent after release, want 2", n)
	}
	if got := tr.requests(); got.Watch != 1 {
		t.Errorf("requests = %+v, want one watch", got)
	}
}
