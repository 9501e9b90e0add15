package reflector

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cachetune/cachetune/internal/leakcheck"
)

// testReporter records what a pacer reports, as leanstore's status reporter does in
// Status.ForcedGCs and Status.HeapBoundOff.
type testReporter struct {
	mu           sync.Mutex
	forcedGCs    int64
	heapBoundOff string
}

func (r *testReporter) HeapBound(off string) {
	r.mu.Lock()
	r.heapBoundOff = off
	r.mu.Unlock()
}

func (r *testReporter) ForcedGC() {
	r.mu.Lock()
	r.forcedGCs++
	r.mu.Unlock()
}

func (r *testReporter) status() (forcedGCs int64, heapBoundOff string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.forcedGCs, r.heapBoundOff
}

func TestGCPolicyChosen(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	const noLimit = math.MaxInt64
	for _, tc := range []struct {
		name     string
		getenv   func(string) string
		gogc     uint64
		memLimit uint64
		chosen   bool
	}{
		{"defaults", env(), 100, noLimit, false},
		{"GOGC=100 in the environment", env("GOGC", "100"), 100, noLimit, true},
		{"GOGC=off", env("GOGC", "off"), math.MaxUint64, noLimit, true},
		{"GOMEMLIMIT", env("GOMEMLIMIT", "512MiB"), 100, 512 << 20, true},
		{"SetGCPercent(50)", env(), 50, noLimit, true},
		{"SetGCPercent(-1)", env(), math.MaxUint64, noLimit, true},
		{"SetMemoryLimit", env(), 100, 1 << 30, true},
		{"other variables", env("GODEBUG", "gctrace=1"), 100, noLimit, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := gcPolicyChosen(tc.getenv, tc.gogc, tc.memLimit)
			if (got != "") != tc.chosen {
				t.Errorf("gcPolicyChosen = %q, want chosen=%v", got, tc.chosen)
			}
		})
	}
}

// simulateList runs a pacer the way a list does: objects kept (keep bytes each)
// and the garbage of decoding them (garbage bytes each), a tick after each, and
// finish at the end. It returns the collections the pacer forced.
func simulateList(p *Pacer, objects, keep, garbage int) int {
	kept := make([][]byte, 0, objects)
	var sink []byte
	for range objects {
		kept = append(kept, make([]byte, keep))
		sink = make([]byte, garbage)
		sink[0] = 1
		p.Tick()
	}
	p.Finish()
	_ = sink
	keepAlive(kept)
	return p.forced
}

//go:noinline
func keepAlive(v [][]byte) { _ = len(v) }

// processOwnsGC reports whether this test process runs with a GC policy of its
// own, in which case tests that expect forced collections cannot run.
func processOwnsGC(t *testing.T) {
	if off := NewPacer(1.25).off; off != "" {
		t.Skipf("the test process chose its GC policy (%s): the heap bound is off", off)
	}
}

func TestPacerForcesCollectionsAndCountsThem(t *testing.T) {
	processOwnsGC(t)
	tr := &testReporter{}
	p := NewPacer(1.25).ReportTo(tr)
	forced := simulateList(p, 2000, 4<<10, 32<<10)
	if forced == 0 {
		t.Fatal("a list with 64 MB of garbage forced no collection")
	}
	if forcedGCs, off := tr.status(); forcedGCs != int64(forced) || off != "" {
		t.Errorf("status: %d forced collections, heap bound off %q; want %d and on", forcedGCs, off, forced)
	}
}

func TestPacerCapsCollectionsPerList(t *testing.T) {
	processOwnsGC(t)
	// 8 MB live: the runtime collects after about 8 MB of garbage, the heap
	// bound after 2 MB. 300 heap checks with 4 MB of garbage each: every
	// check collects, up to the maximum.
	ballast := make([][]byte, 8)
	for i := range ballast {
		ballast[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	forced := simulateList(NewPacer(1.25), 300*paceEvery, 0, 64<<10)
	runtime.KeepAlive(ballast)
	if forced != maxForcedPerList {
		t.Errorf("forced %d collections in one list, want the maximum, %d", forced, maxForcedPerList)
	}
	// The next list has a budget of its own.
	if again := simulateList(NewPacer(1.25), 4*paceEvery, 0, 64<<10); again == 0 {
		t.Error("the next list forced no collection")
	}
}

// TestPacerRespectsTheProcessGCSettings sets the process's GC percentage and
// memory limit as a program would, through runtime/debug, and restores them:
// the pacer must force nothing and say why.
func TestPacerRespectsTheProcessGCSettings(t *testing.T) {
	processOwnsGC(t)
	for _, tc := range []struct {
		name string
		set  func() (restore func())
		want string
	}{
		{"SetGCPercent", func() func() {
			old := debug.SetGCPercent(150)
			return func() { debug.SetGCPercent(old) }
		}, "SetGCPercent"},
		{"SetMemoryLimit", func() func() {
			old := debug.SetMemoryLimit(8 << 30)
			return func() { debug.SetMemoryLimit(old) }
		}, "SetMemoryLimit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			restore := tc.set()
			defer restore()
			tr := &testReporter{}
			p := NewPacer(1.25).ReportTo(tr)
			if forced := simulateList(p, 2000, 4<<10, 32<<10); forced != 0 {
				t.Errorf("forced %d collections in a process that set its own GC policy", forced)
			}
			if forcedGCs, off := tr.status(); forcedGCs != 0 || !strings.Contains(off, tc.want) {
				t.Errorf("status: %d forced, heap bound off %q; want 0 and a reason naming %s", forcedGCs, off, tc.want)
			}
		})
	}
	// Set in the middle of a list: respected from then on.
	p := NewPacer(1.25)
	old := debug.SetGCPercent(300)
	forced := simulateList(p, 2000, 4<<10, 32<<10)
	debug.SetGCPercent(old)
	if forced != 0 || p.off == "" {
		t.Errorf("GC percentage set during a list: %d collections forced after it (heap bound off: %q), want 0", forced, p.off)
	}
}

const pacerHelperEnv = "LEANSTORE_PACER_HELPER"

// TestPacerRespectsGOGCInTheEnvironment runs the pacer in child processes: one
// started with GOGC=100 (the default value, but chosen by the process's owner)
// and one with GOMEMLIMIT, which must force nothing, and one with neither, which
// must force collections.
func TestPacerRespectsGOGCInTheEnvironment(t *testing.T) {
	if os.Getenv(pacerHelperEnv) != "" {
		t.Skip("in the helper process")
	}
	base := []string{pacerHelperEnv + "=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			base = append(base, kv)
		}
	}
	for _, tc := range []struct {
		env    string
		forces bool
	}{
		{"GOGC=100", false},
		{"GOMEMLIMIT=64GiB", false},
		{"", true},
	} {
		t.Run(fmt.Sprintf("env=%q", tc.env), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestPacerHelperProcess$", "-test.short", "-test.count=1")
			cmd.Env = append([]string(nil), base...)
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("helper: %v\n%s", err, out)
			}
			var forced int
			var off string
			for _, line := range strings.Split(string(out), "\n") {
				if rest, ok := strings.CutPrefix(line, "pacer: "); ok {
					n, _ := fmt.Sscanf(rest, "forced=%d", &forced)
					if n != 1 {
						t.Fatalf("helper printed %q", line)
					}
					_, off, _ = strings.Cut(rest, " off=")
				}
			}
			if tc.forces && forced == 0 {
				t.Errorf("with %q: no collection forced (off=%q)\n%s", tc.env, off, out)
			}
			if !tc.forces && (forced != 0 || off == "") {
				t.Errorf("with %q: %d collections forced (off=%q), want none and a reason", tc.env, forced, off)
			}
		})
	}
}

// TestPacerHelperProcess is the child of TestPacerRespectsGOGCInTheEnvironment.
func TestPacerHelperProcess(t *testing.T) {
	if os.Getenv(pacerHelperEnv) == "" {
		t.Skip("only as a helper process")
	}
	p := NewPacer(1.25)
	forced := simulateList(p, 2000, 4<<10, 32<<10)
	fmt.Printf("pacer: forced=%d off=%s\n", forced, p.off)
}

func TestGarbageAbove(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		inUse, live uint64
		bound       float64
		want        bool
	}{
		{130 * mb, 100 * mb, 1.25, true},
		{120 * mb, 100 * mb, 1.25, false}, // within the bound
		{4 * mb, 1 * mb, 1.25, true},
		{2 * mb, 1 * mb, 1.25, false}, // less garbage than minGarbage
		{100 * mb, 120 * mb, 1.25, false},
		{101 * mb, 100 * mb, 1, false}, // finish: less than minGarbage
		{103 * mb, 100 * mb, 1, true},
	} {
		if got := garbageAbove(tc.inUse, tc.live, tc.bound, minGarbage); got != tc.want {
			t.Errorf("garbageAbove(%d MiB in use, %d MiB live, %v) = %v, want %v", tc.inUse/mb, tc.live/mb, tc.bound, got, tc.want)
		}
	}
}

func TestLiveModelProjects(t *testing.T) {
	var m liveModel
	m.cycles = 7 // collections before the list
	// No collection during the list yet: no projection.
	m.observe(64, 50<<20, 7)
	if got := m.project(640, 50<<20); got != 50<<20 {
		t.Errorf("before any collection: projected %d, want the last live heap", got)
	}
	// One collection: still none (no rate yet).
	m.observe(1000, 60<<20, 8)
	if got := m.project(2000, 60<<20); got != 60<<20 {
		t.Errorf("after one collection: projected %d, want the last live heap", got)
	}
	// A second: 20 MiB more for 2,000 objects, 10,485.76 bytes each.
	m.observe(3000, 80<<20, 9)
	per := float64(20<<20) / 2000
	if m.perObject != per {
		t.Errorf("bytes per object = %v, want %v", m.perObject, per)
	}
	if got, want := m.project(4000, 80<<20), uint64(80<<20+1000*per); got != want {
		t.Errorf("projected %d after 1,000 more objects, want %d", got, want)
	}
	if got := m.project(3000, 80<<20); got != 80<<20 {
		t.Errorf("projected %d at the collection itself, want its live heap", got)
	}
	// The same cycle count again: nothing new.
	m.observe(3500, 99<<20, 9)
	if m.lastN != 3000 || m.perObject != per {
		t.Errorf("an unchanged cycle count moved the model: last at %d, %v bytes per object", m.lastN, m.perObject)
	}
	// Several cycles at once (the runtime's own collections in between)
	// count as one observation; the rate is from the first collection on.
	m.observe(5000, 100<<20, 12)
	if want := float64(40<<20) / 4000; m.perObject != want {
		t.Errorf("bytes per object = %v, want %v", m.perObject, want)
	}
	// The live heap shrank below the first collection's (other work freed
	// more than the list kept): no growth projected.
	m.observe(6000, 40<<20, 13)
	if m.perObject != 0 || m.project(7000, 40<<20) != 40<<20 {
		t.Errorf("after the live heap shrank: %v bytes per object, projected %d; want 0 and the live heap", m.perObject, m.project(7000, 40<<20))
	}
}

// TestPacerProjectionForcesFewerCollections: a list that keeps half of what
// it allocates forces fewer collections when the bound is measured against
// the projected live heap than against the last collection's, and the heap
// stays within the bound of the list's live heap at the end.
func TestPacerProjectionForcesFewerCollections(t *testing.T) {
	processOwnsGC(t)
	defer func(p bool) { projectLive = p }(projectLive)
	run := func(project bool) (forced int, peakOverLive float64) {
		projectLive = project
		runtime.GC()
		heap := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		rtmetrics.Read(heap)
		base := heapLive()
		p := NewPacer(1.25)
		const objects, keep, garbage = 6000, 16 << 10, 16 << 10
		kept := make([][]byte, 0, objects)
		var sink []byte
		peak := uint64(0)
		for i := range objects {
			kept = append(kept, make([]byte, keep))
			sink = make([]byte, garbage)
			sink[0] = 1
			if i%checkEvery == checkEvery-1 {
				rtmetrics.Read(heap)
				peak = max(peak, heap[0].Value.Uint64())
			}
			p.Tick()
		}
		p.Finish()
		runtime.GC()
		live := heapLive()
		keepAlive(kept)
		return p.forced, float64(peak-base) / float64(live-base)
	}
	projected, projectedPeak := run(true)
	last, lastPeak := run(false)
	t.Logf("forced collections: %d projected (peak %.2f of the live heap), %d against the last collection (peak %.2f)", projected, projectedPeak, last, lastPeak)
	if projected == 0 || 3*projected > 2*last {
		t.Errorf("forced %d collections with the projection, %d without: want at most two thirds, and some", projected, last)
	}
	if projectedPeak > 1.35 {
		t.Errorf("with the projection the heap peaked at %.2f times the list's live heap, want within the bound of 1.25 (and the objects between two checks)", projectedPeak)
	}
}

func TestCeiling(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name           string
		expected, live uint64
		want           float64
	}{
		// A re-list at churn 0.1 of a 40 MB cache: the old versions of the
		// changed objects are live too; the ceiling stays at 1.25 times
		// the 40 MB it ends with.
		{"few changes", 40 * mb, 43 * mb, 50 * mb},
		{"nothing changed", 40 * mb, 40 * mb, 50 * mb},
		// Every object changed: two versions live; half the margin over
		// the live heap of the moment.
		{"every object changed", 40 * mb, 80 * mb, 90 * mb},
		// The cache shrank: still bounded by what it was expected to end with.
		{"objects deleted", 40 * mb, 20 * mb, 50 * mb},
	} {
		if got := ceiling(1.25, tc.expected, tc.live); got != tc.want {
			t.Errorf("%s: ceiling = %.1f MiB, want %.1f MiB", tc.name, got/mb, tc.want/mb)
		}
	}
}

// TestPacerBoundsARelistByTheHeapItEndsWith re-lists a cache of 3,000
// objects whose tenth changed: the old versions of the changed objects stay
// live beside the new ones until the end, as the store being replaced holds
// them, and decoding each object makes garbage. The heap must stay within
// about the bound of the live heap the re-list ends with, where a pacer that
// bounds by the live heap of the moment lets the old versions and its margin
// add up.
func TestPacerBoundsARelistByTheHeapItEndsWith(t *testing.T) {
	processOwnsGC(t)
	const objects, size, garbage = 3000, 16 << 10, 48 << 10
	relist := func(Relisting bool) (forced int, peakOverLive float64) {
		store := make([][]byte, objects)
		for i := range store {
			store[i] = make([]byte, size)
		}
		runtime.GC()
		heap := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		p := NewPacer(1.25).Relisting(Relisting)
		next := make([][]byte, objects)
		var sink []byte
		peak := uint64(0)
		for i := range objects {
			if i%10 == 0 { // changed: a new version, the old one still in the store
				next[i] = make([]byte, size)
			} else { // unchanged: the cached object, handed back
				next[i] = store[i]
			}
			sink = make([]byte, garbage)
			sink[0] = 1
			if i%checkEvery == checkEvery-1 {
				rtmetrics.Read(heap)
				peak = max(peak, heap[0].Value.Uint64())
			}
			p.Tick()
		}
		p.Finish()
		keepAlive(store)
		runtime.GC()
		live := heapLive()
		keepAlive(next)
		return p.forced, float64(peak) / float64(live)
	}
	forced, peak := relist(true)
	plainForced, plainPeak := relist(false)
	t.Logf("re-list: %d forced collections, peak %.2f of the live heap it ended with; bounded by the live heap of the moment: %d, %.2f", forced, peak, plainForced, plainPeak)
	if peak > 1.3 {
		t.Errorf("the re-list peaked at %.2f times the live heap it ended with, want at most 1.3 (bound 1.25)", peak)
	}
	if forced == 0 {
		t.Error("the re-list forced no collection")
	}
}

// handOverSink keeps the garbage of TestPacerGuardsTheHandOver on the heap.
var handOverSink []byte

// TestPacerGuardsTheHandOver plays what follows a first list: Finish
// collects, then the informer takes the list in and makes garbage the
// runtime, paced from Finish's collection, would let pile up to about the live
// heap. The guard must collect it while the informer has not taken the list
// in, and its goroutine must end once it has, or once the list's context
// ends.
func TestPacerGuardsTheHandOver(t *testing.T) {
	processOwnsGC(t)
	leakcheck.Check(t)
	before := append(leakcheck.Options(), goleak.IgnoreCurrent())
	ballast := make([][]byte, 8) // 8 MB live: the runtime's own collection comes after about 8 MB of garbage
	for i := range ballast {
		ballast[i] = make([]byte, 1<<20)
	}
	defer runtime.KeepAlive(ballast)
	// handOver returns a counter of the collections the guard forced.
	handOver := func(takenIn func() bool) (func() int64, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		tr := &testReporter{}
		p := NewPacer(1.25).ReportTo(tr)
		p.Finish()
		runtime.GC()
		finished, _ := tr.status() // Finish's own collection, if it ran one
		p.GuardHandOver(ctx, takenIn)
		// 4 MB of garbage: above the guard's threshold (1.05 times 8 MB, plus Finish's
		// minimum), below the runtime's own goal.
		for range 64 {
			handOverSink = make([]byte, 64<<10)
		}
		handOverSink = nil
		return func() int64 { n, _ := tr.status(); return n - finished }, cancel
	}

	var taken atomic.Bool
	forced, cancel := handOver(taken.Load)
	defer cancel()
	if !eventually(10*time.Second, func() bool { return forced() > 0 }) {
		t.Fatal("the guard forced no collection while the informer took the list in")
	}
	taken.Store(true) // the guard's goroutine ends, before the list's context does
	if err := goleak.Find(before...); err != nil {
		t.Errorf("the guard goes on after the informer took the list in: %v", err)
	}

	// Taken in before the guard starts: nothing to guard.
	forced, cancel = handOver(func() bool { return true })
	defer cancel()
	if n := forced(); n != 0 {
		t.Errorf("%d collections forced after the informer had taken the list in", n)
	}

	// Never taken in: the list's context ends the guard.
	_, cancel = handOver(func() bool { return false })
	cancel()
}

// eventually polls cond until it is true or d has passed.
func eventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// handOverTest prepares a test of a guarded hand-over: it skips it when the
// process chose its GC policy, checks that no goroutine outlives it, and
// keeps 8 MB live until it ends, over which the test's garbage is measured.
func handOverTest(t *testing.T) {
	processOwnsGC(t)
	leakcheck.Check(t)
	ballast := make([][]byte, 8)
	for i := range ballast {
		ballast[i] = make([]byte, 1<<20)
	}
	t.Cleanup(func() { runtime.KeepAlive(ballast) })
}

// TestPacerHandOverTicksCollectInTheInformersGoroutine: while a guard runs,
// the informer's decoding of packed objects (HandOverTick after each) and
// its indexer's storing of decoded ones (IndexTick before each) and its
// handlers' taking in of the list's adds (DeliveryTick) force collections
// themselves, synchronously, once the garbage passes half the bound's margin
// (decoding) or a fifth of it (storing and delivering, the guard's own
// threshold); before the guard starts and after it ends, they force none.
func TestPacerHandOverTicksCollectInTheInformersGoroutine(t *testing.T) {
	for _, tc := range []struct {
		name string
		tick func(*Pacer)
		// least is the fewest collections 16 MB of garbage over 8 MB live
		// must force: the runtime's own pacing would collect once or
		// twice; at half the margin (1.125 times 8 MB) the decoding
		// collected 11 times, every 24 objects or so, and the storing, at a
		// fifth, 32 times, at every heap check (every 8 objects).
		least int64
	}{
		{"decoding", (*Pacer).HandOverTick, 4},
		{"storing", (*Pacer).IndexTick, 20},
		{"delivering", (*Pacer).DeliveryTick, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			handOverTest(t)
			take := func(p *Pacer) {
				for range 256 { // 16 MB of garbage, 64 KB an object
					handOverSink = make([]byte, 64<<10)
					tc.tick(p)
				}
				handOverSink = nil
			}
			tr := &testReporter{}
			p := NewPacer(1.25).ReportTo(tr)
			p.Finish()
			runtime.GC()
			base, _ := tr.status()
			take(p)
			if n, _ := tr.status(); n != base {
				t.Fatalf("%d collections forced before the guard started, want none", n-base)
			}

			// A guard as GuardHandOver starts it, without its goroutine, whose own
			// collections would hide the informer's.
			p.handOverMax = p.forced + maxForcedPerList
			p.guarding.Store(true)
			take(p)
			if n, _ := tr.status(); n-base < tc.least {
				t.Fatalf("%d collections forced while 16 MB were taken in under the guard, want at least %d", n-base, tc.least)
			}

			// A guard that ends: nothing forced after it.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p.GuardHandOver(ctx, func() bool { return false })
			cancel()
			if !eventually(10*time.Second, func() bool { return !p.guarding.Load() }) {
				t.Fatal("the guard did not end with the list's context")
			}
			forced, _ := tr.status()
			take(p)
			if n, _ := tr.status(); n != forced {
				t.Fatalf("%d collections forced after the guard ended, want none", n-forced)
			}
		})
	}
}

// TestPacerOfAFirstListIsTickedByTheIndexer: after a first list of decoded
// objects, the informer's indexer (ListWatch.Indexed, which leanstore's
// index functions call) and its handlers (ListWatch.Delivered, which
// leanstore's wrappers of them call) tick that list's pacer while its guard
// runs, and collections are forced as the informer stores the objects and
// delivers them; once the informer has taken the list in and the guard has
// ended, none are.
func TestPacerOfAFirstListIsTickedByTheIndexer(t *testing.T) {
	for _, tc := range []struct {
		name string
		tick func(*ListWatch)
	}{
		{"indexer", (*ListWatch).Indexed},
		{"handlers", (*ListWatch).Delivered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			handOverTest(t)
			r := &loopReporter{}
			c := testConfig(&fakeSource{pods: []corev1.Pod{*testPod("a", "7"), *testPod("b", "8")}, rv: "9"}, StreamingOff, r)
			c.ListOptions, c.HeapBound = nil, 1.25
			lw := New(c)
			var taken atomic.Bool
			lw.GuardHandOver(taken.Load)
			if _, err := lw.ListWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "0"}); err != nil {
				t.Fatal(err)
			}
			p := lw.lister.handOver.Load()
			if p == nil || !p.guarding.Load() {
				t.Fatalf("the %s' tick does not reach the guarded pacer of the first list", tc.name)
			}
			store := func() {
				for range 256 { // 16 MB of garbage over 8 MB live, 64 KB an object
					handOverSink = make([]byte, 64<<10)
					tc.tick(lw)
				}
				handOverSink = nil
			}
			base, _ := r.status()
			store()
			// At every heap check (every 8 objects): about 30. The guard's own
			// goroutine, which reads the heap every millisecond, collects a few
			// times at most in the milliseconds the loop would take without them.
			if n, _ := r.status(); n-base < 20 {
				t.Fatalf("%d collections forced while the %s took 16 MB in under the guard, want at least 20", n-base, tc.name)
			}
			taken.Store(true)
			if !eventually(10*time.Second, func() bool { return !p.guarding.Load() }) {
				t.Fatal("the guard did not end once the informer had taken the list in")
			}
			base, _ = r.status()
			store()
			if n, _ := r.status(); n != base {
				t.Fatalf("%d collections forced by the %s after the guard ended, want none", n-base, tc.name)
			}
		})
	}
}

// TestPacerPackedHandOverHasTwiceTheBudget: the hand-over of a packed list,
// whose decoding makes as much garbage again as the list, may force twice
// maxForcedPerList collections beyond the list's; a hand-over of decoded
// objects, maxForcedPerList.
func TestPacerPackedHandOverHasTwiceTheBudget(t *testing.T) {
	handOverTest(t)
	defer func(n int) { maxForcedPerList = n }(maxForcedPerList)
	maxForcedPerList = 3
	for _, tc := range []struct {
		name   string
		guard  func(p *Pacer, ctx context.Context, takenIn func() bool)
		budget int64
	}{
		{"decoded", (*Pacer).GuardHandOver, 3},
		{"packed", (*Pacer).GuardPackedHandOver, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &testReporter{}
			p := NewPacer(1.25).ReportTo(tr)
			p.Finish()
			base, _ := tr.status()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tc.guard(p, ctx, func() bool { return false })
			for range 512 { // 32 MB of garbage, 64 KB an object: about 30 collections at half the margin
				handOverSink = make([]byte, 64<<10)
				p.HandOverTick()
			}
			handOverSink = nil
			cancel()
			if !eventually(10*time.Second, func() bool { return !p.guarding.Load() }) {
				t.Fatal("the guard did not end with the list's context")
			}
			if n, _ := tr.status(); n-base != tc.budget {
				t.Fatalf("%d collections forced during the hand-over, want its budget, %d", n-base, tc.budget)
			}
		})
	}
}
