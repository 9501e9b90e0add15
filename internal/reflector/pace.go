package reflector

import (
	"context"
	"math"
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Pacer runs between the objects of a list. Every few objects it lets other
// goroutines run (decoding thousands of objects in one go starves health probes
// and every other goroutine on a small GOMAXPROCS), and it keeps the heap within
// heapBound times the live heap: a list decodes objects faster than the garbage
// collector's pacing expects, and without a bound the heap grows to about twice
// the live heap (GOGC=100) before a collection, which is the start-up and re-list
// spike this package exists to remove. When the heap in use exceeds the bound by
// more than minGarbage, the pacer runs a collection itself. It reads the heap
// every checkEvery objects (a read of runtime/metrics costs about half a
// microsecond): between two reads the heap grows by the garbage of that many
// objects, tens of KB each, which checks every 64 objects let reach 8 % of a
// lean cache's heap of 50 MB, on top of the bound. A process whose heap is
// mostly something other than this list rarely crosses the bound, so the check
// costs it nothing.
//
// The bound is help for processes that left the garbage collector alone. A
// process that chose its own policy (GOGC or GOMEMLIMIT in its environment, or
// a call to debug.SetGCPercent or debug.SetMemoryLimit) gets no forced
// collection: the pacer reads the settings (runtime/metrics /gc/gogc:percent
// and /gc/gomemlimit:bytes) and never writes them. A list forces at most
// maxForcedPerList collections, so the cost of the help has a ceiling whatever
// the list's size; past it the runtime's own pacing takes over for the rest of
// the list.
//
// The live heap the bound multiplies is the one the list has now, projected
// (liveModel), not the one the last collection found: a list keeps much of what
// it allocates, so by the time the heap in use is 1.25 times the last
// collection's live heap, the live heap itself has grown, and a collection
// there finds little garbage. Measured against the last collection, a list
// that kept half of what it allocated forced a collection for every 12 % of
// growth, each marking the whole heap; against the projection, one for every
// third or so, and the heap still stays within the bound of the live heap of
// the moment, which in a list only grows, so within the bound of the final one.
type Pacer struct {
	bound   float64
	n       int
	forced  int
	off     string // why the bound does not apply; "" when it does
	tr      PaceReporter
	samples []rtmetrics.Sample
	live    liveModel
	// expected is the live heap a re-list is expected to end with: the one
	// the last collection before it found (the cache it replaces is about
	// the size of the one it builds); 0 for a first list.
	expected uint64

	// guardMu serializes the hand-over's collections: the guard's goroutine
	// and the ticks from the informer's (HandOverTick, IndexTick,
	// DeliveryTick). guarding is set while the guard runs; handOverN counts
	// the ticks.
	guardMu   sync.Mutex
	guarding  atomic.Bool
	handOverN int
	// handOverMax caps the collections forced up to the end of the
	// hand-over: the list's own and at most maxForcedPerList more.
	handOverMax int
}

const (
	paceEvery  = 64      // objects between yields
	checkEvery = 8       // objects between heap checks
	minGarbage = 2 << 20 // never collect for less garbage than this
)

// maxForcedPerList caps the collections one list forces, Finish's included.
// A list that shares equal parts keeps less of what it allocates than one that
// only strips, so it forces several times as many collections (the projection
// does not change that), and a lower cap let its peak rise far past the bound:
// BenchmarkPacedList (go test ./internal/reflector/ -run '^$' -bench
// BenchmarkPacedList -benchtime 3x) compares, for a list of 10,000 Pods, the
// collections and peaks with and without the cap and the projection;
// docs/memory.md ("The defaults, measured") gives the collections measured.
// 256 leaves such lists alone and still bounds the cost of a list many times
// larger, or of one that makes far more garbage. (A variable only so that the
// benchmark can compare without it.)
var maxForcedPerList = 256

// Indexes into pacer.samples.
const (
	sampleHeapInUse = iota
	sampleHeapLive
	sampleGOGC
	sampleMemLimit
	sampleCycles
)

// NewPacer returns the pacer of one list with the given heap bound.
func NewPacer(bound float64) *Pacer {
	p := &Pacer{bound: bound, samples: []rtmetrics.Sample{
		sampleHeapInUse: {Name: "/memory/classes/heap/objects:bytes"},
		sampleHeapLive:  {Name: "/gc/heap/live:bytes"},
		sampleGOGC:      {Name: "/gc/gogc:percent"},
		sampleMemLimit:  {Name: "/gc/gomemlimit:bytes"},
		sampleCycles:    {Name: "/gc/cycles/total:gc-cycles"},
	}}
	if bound > 0 {
		rtmetrics.Read(p.samples)
		p.off = gcPolicyChosen(os.Getenv, p.samples[sampleGOGC].Value.Uint64(), p.samples[sampleMemLimit].Value.Uint64())
		p.live.cycles = p.samples[sampleCycles].Value.Uint64() // collections before the list are not its
	}
	return p
}

// Relisting makes p the pacer of a re-list when relist is true: the heap is
// then bounded by the bound times the live heap the re-list is expected to
// end with (ceiling). It returns p.
func (p *Pacer) Relisting(relist bool) *Pacer {
	if relist && p.bound > 0 && p.off == "" {
		p.expected = p.samples[sampleHeapLive].Value.Uint64()
	}
	return p
}

// PaceReporter is told what a pacer does: leanstore's status reporter, which shows it
// in the informer's Status and metrics.
type PaceReporter interface {
	// HeapBound records whether the heap bound applies to the informer's
	// lists: off says why not, "" when it does.
	HeapBound(off string)
	// ForcedGC counts a collection the heap bound ran.
	ForcedGC()
}

// ReportTo makes p report to tr, the status reporter of the informer that lists: the
// collections it forces (Status.ForcedGCs and the forced_gcs_total counter) and
// why the bound does not apply (Status.HeapBoundOff). It returns p.
func (p *Pacer) ReportTo(tr PaceReporter) *Pacer {
	p.tr = tr
	tr.HeapBound(p.off)
	return p
}

// gcPolicyChosen says why the process has chosen its own garbage-collection
// policy, or returns "" when it has not: GOGC or GOMEMLIMIT set in the
// environment (read through getenv), or a GOGC percentage (gogc) or memory
// limit (memLimit) other than the runtime's defaults, as debug.SetGCPercent and
// debug.SetMemoryLimit set them. A call that sets the defaults themselves
// (SetGCPercent(100), SetMemoryLimit(math.MaxInt64)) cannot be told from none.
func gcPolicyChosen(getenv func(string) string, gogc, memLimit uint64) string {
	switch {
	case getenv("GOGC") != "":
		return "GOGC is set in the environment"
	case getenv("GOMEMLIMIT") != "":
		return "GOMEMLIMIT is set in the environment"
	case gogc != 100:
		return "the process set its GC percentage (debug.SetGCPercent)"
	case memLimit != math.MaxInt64:
		return "the process set a memory limit (debug.SetMemoryLimit)"
	}
	return ""
}

// Tick is called after each object of a list.
func (p *Pacer) Tick() {
	if p.n++; p.n%checkEvery != 0 {
		return
	}
	if !p.collectAbove(p.bound, minGarbage, maxForcedPerList-1, projectLive) && p.n%paceEvery == 0 {
		runtime.Gosched()
	}
}

// projectLive makes Tick measure the bound against the projected live heap (a
// variable only so that the benchmark can compare without it).
var projectLive = true

// Finish is called when a list is complete, before the reflector replaces the
// store's contents: client-go's replacement allocates per object (a set of
// keys, a new items map and index, the events for handlers; docs/memory.md,
// "Two stores during a re-list", measures it), and it
// should start from a heap without the list's garbage rather than on top of it.
// One collection per list is cheap next to the list itself, so Finish collects
// whatever garbage is left, however little. Tick leaves it one collection of
// the list's maximum.
func (p *Pacer) Finish() {
	p.collectAbove(1, finishMinGarbage, maxForcedPerList, false)
}

// finishMinGarbage is the garbage below which Finish does not collect: less than
// a collection's own cost.
const finishMinGarbage = 256 << 10

// GuardHandOver keeps the bound after a first list's Finish, while the
// informer takes in what the list handed it, until handOverGrace after takenIn
// reports that it has (the informer's HasSynced), ctx ends or maxHandOver has
// passed. It returns at once; the guard runs in a goroutine of its own, which
// reads the heap every handOverEvery and collects when the heap in use exceeds
// a fifth of the bound's margin over the live heap the last collection found
// (1.05 times it for a bound of 1.25) by more than finishMinGarbage, at most
// maxForcedPerList times beyond the list's own. The pacer must not be used by
// anything else once guarded.
//
// client-go's hand-over allocates for every object (the FIFO's deltas, the
// indexer's key and index entries, the handlers' notifications: a few hundred
// bytes each), all of it after Finish's collection and most of it garbage by
// the time the informer has synced; for a cache of small objects that is a
// third or more of the live heap, which the runtime, paced from Finish's
// collection, lets pile up (docs/memory.md, "The start-up peak of small
// caches"). The informer's indexer ticks the guard too (IndexTick), from the
// goroutine that allocates.
func (p *Pacer) GuardHandOver(ctx context.Context, takenIn func() bool) {
	p.guardHandOver(ctx, takenIn, maxForcedPerList)
}

// GuardPackedHandOver is GuardHandOver for a list of packed objects, which
// the informer decodes one by one as it takes them in (HandOverTick). Their
// hand-over makes as much garbage again as the list's decoding, all of it
// over a live heap as large as the list's at its end, where the list made
// most of its garbage over a smaller one: it needs more collections than
// the list did (about 250 for 10,000 typed Pods, the list about 105, in
// cachebench's encoded modes), so it may force twice maxForcedPerList. With
// one maxForcedPerList, a hand-over slowed by a loaded machine used it up
// before the informer synced, and the runtime's pacing let the heap reach
// about twice the live heap at the end (bench/results/cachebench-encoded.txt
// in its history: 2.21 at start-up, typed LIST).
func (p *Pacer) GuardPackedHandOver(ctx context.Context, takenIn func() bool) {
	p.guardHandOver(ctx, takenIn, 2*maxForcedPerList)
}

// guardHandOver starts GuardHandOver's guard, which may force max
// collections beyond the list's own.
func (p *Pacer) guardHandOver(ctx context.Context, takenIn func() bool, max int) {
	if p.bound <= 0 || p.off != "" || takenIn == nil || takenIn() {
		return
	}
	handOver := p.handOverBound()
	p.handOverMax = p.forced + max
	p.guarding.Store(true)
	go func() {
		defer p.guarding.Store(false)
		t := time.NewTicker(handOverEvery)
		defer t.Stop()
		deadline := time.Now().Add(maxHandOver)
		var takenAt time.Time // when takenIn first reported true
		for now := time.Now(); now.Before(deadline); now = time.Now() {
			if takenAt.IsZero() && takenIn() {
				takenAt = now
			}
			if !takenAt.IsZero() && now.Sub(takenAt) >= handOverGrace {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			p.guardMu.Lock()
			p.collectAbove(handOver, finishMinGarbage, p.handOverMax, false)
			p.guardMu.Unlock()
		}
	}()
}

// HandOverTick is called by the informer after each object it decodes while
// it takes in what a guarded list handed it (GuardHandOver): an encoded
// store's packed objects, which it decodes one by one for its handlers
// (Packer). The guard's goroutine reads the heap every millisecond, but an
// informer decoding a few objects every microsecond or so outruns it, and
// its collections, which the informer goes on allocating through; here the
// decoding goroutine itself collects, as Tick does during the list, every
// checkEvery objects once the heap in use passes half the bound's margin
// over the live heap the last collection found. It does nothing once the
// guard has ended.
func (p *Pacer) HandOverTick() {
	p.handOverTick(1 + (p.bound-1)/2)
}

// DeliveryTick is called for each add of a guarded first list that
// client-go delivers to one of the informer's event handlers, on that
// handler's goroutine (ListWatch.Delivered). Once the indexer has stored the
// list (where IndexTick runs), client-go queues a notification per object
// for every handler, and each handler's goroutine takes them one by one,
// with a trace per notification while more than 1,024 wait
// (bench/results/handover-allocs.txt): garbage made after the indexer's last
// tick, while the guard's goroutine waits for a CPU, which let the start-up
// peak of a cache of small objects reach 1.3 to 1.4 times its live heap
// (bench/results/handover-handler-tick.txt). It collects as IndexTick does,
// every checkEvery calls, at the guard's own threshold. It does nothing once
// the guard has ended.
func (p *Pacer) DeliveryTick() {
	p.handOverTick(p.handOverBound())
}

// IndexTick is called by the informer for each decoded object its indexer
// takes in while it takes in what a guarded first list handed it
// (GuardHandOver): client-go's hand-over, which allocates on client-go's
// goroutines, where the guard's goroutine waits for a CPU for tens of
// milliseconds between two reads of the heap while the hand-over keeps the
// CPUs busy. Here the goroutine that stores the objects collects itself,
// every checkEvery objects, at the guard's own threshold (handOverBound).
// It does nothing once the guard has ended.
func (p *Pacer) IndexTick() {
	p.handOverTick(p.handOverBound())
}

// handOverTick collects, every checkEvery calls while the guard runs, when
// the heap in use exceeds bound times the live heap the last collection
// found.
func (p *Pacer) handOverTick(bound float64) {
	if !p.guarding.Load() {
		return
	}
	p.guardMu.Lock()
	defer p.guardMu.Unlock()
	if p.handOverN++; p.handOverN%checkEvery != 0 {
		return
	}
	p.collectAbove(bound, finishMinGarbage, p.handOverMax, false)
}

// handOverBound is the guard's threshold: a fifth of the bound's margin over
// the live heap (1.05 times it for a bound of 1.25). During the hand-over
// nearly all that is above the live heap is garbage, so an early collection
// finds plenty, and the heap goes on growing for tens of milliseconds before
// the guard's goroutine gets a CPU to read it (bench/results/
// handover-guard.txt compares half the margin and a fifth).
func (p *Pacer) handOverBound() float64 { return 1 + (p.bound-1)/5 }

const (
	// handOverEvery is how often GuardHandOver reads the heap: a read costs
	// about half a microsecond, and the hand-over of 10,000 small objects
	// takes tens of milliseconds.
	handOverEvery = time.Millisecond
	// handOverGrace is how long the guard goes on once the informer has
	// taken the list in: its handlers receive the list's notifications
	// after that, and allocate for them too.
	handOverGrace = 250 * time.Millisecond
	// maxHandOver ends a guard whose informer never reports that it took the
	// list in (its handlers blocked, say).
	maxHandOver = time.Minute
)

// collectAbove runs a collection when the heap bound applies, fewer than max
// collections were forced in this list, and the heap in use exceeds bound times
// the live heap by more than minGarbage: the projected live heap with project,
// the last collection's otherwise. It reports whether it collected.
func (p *Pacer) collectAbove(bound float64, minGarbage uint64, max int, project bool) bool {
	if p.bound <= 0 || p.off != "" || p.forced >= max {
		return false
	}
	rtmetrics.Read(p.samples)
	if off := gcPolicyChosen(noEnv, p.samples[sampleGOGC].Value.Uint64(), p.samples[sampleMemLimit].Value.Uint64()); off != "" {
		// Set during the list: respected from now on.
		p.off = off
		if p.tr != nil {
			p.tr.HeapBound(off)
		}
		return false
	}
	inUse, live := p.samples[sampleHeapInUse].Value.Uint64(), p.samples[sampleHeapLive].Value.Uint64()
	p.live.observe(p.n, live, p.samples[sampleCycles].Value.Uint64())
	if project {
		live = p.live.project(p.n, live)
	}
	over := garbageAbove(inUse, live, bound, minGarbage)
	if project && p.expected > 0 {
		over = inUse > live+minGarbage && float64(inUse) > ceiling(bound, p.expected, live)
	}
	if !over {
		return false
	}
	runtime.GC()
	p.forced++
	if p.tr != nil {
		p.tr.ForcedGC()
	}
	rtmetrics.Read(p.samples) // what this collection found, at this object
	p.live.observe(p.n, p.samples[sampleHeapLive].Value.Uint64(), p.samples[sampleCycles].Value.Uint64())
	return true
}

// garbageAbove reports whether a heap of inUse bytes, of which live are live,
// holds more than minGarbage of garbage and more than bound times live.
func garbageAbove(inUse, live uint64, bound float64, minGarbage uint64) bool {
	return inUse > live+minGarbage && float64(inUse) > bound*float64(live)
}

// ceiling is the heap in use above which a re-list collects: bound times
// the live heap it is expected to end with (expected), while the live heap
// (live, projected) has not outgrown that by much. During a re-list the cache
// being replaced is still live, and so is the old version of every object that
// changed: bounded by the live heap of the moment, a re-list of a lean cache at
// churn 0.1 peaked well above the bound times the live heap it ended with, the
// old versions and minGarbage on top of the bound (docs/memory.md, "Why two
// measurements of re-list peaks differ").
// When the old versions alone pass the expected heap by more than half the
// bound's margin (many objects changed), the ceiling stays that half margin
// above the live heap of the moment: a re-list of a cache whose every object
// changed holds two versions of it whatever the pacer does, and collecting for
// less garbage than that would cost collections without lowering the peak
// much.
func ceiling(bound float64, expected, live uint64) float64 {
	return max(bound*float64(expected), float64(live)*(1+(bound-1)/2))
}

// liveModel projects a list's live heap between collections. The runtime
// measures the live heap only when a collection ends (/gc/heap/live); the
// list knows how many objects it has kept since. The model learns the bytes
// each object adds to the live heap from two collections seen during the list
// (the growth of the live heap over the objects kept between them), and
// projects the live heap as the last collection's plus that much for every
// object kept since. Until it has seen two collections, and when the live heap
// shrank between them (other work in the process freed more than the list
// kept), it projects no growth: the last collection's live heap, the bound's
// measure before the model. Other lists running at the same time grow the live
// heap too; that growth counts as this list's, which is what the bound needs,
// since the heap in use counts their allocations too.
type liveModel struct {
	cycles uint64 // GC cycles completed when last observed
	seen   int    // collections seen during the list
	// firstN and firstLive are the objects kept and the live heap at the
	// first collection seen; lastN and lastLive at the latest.
	firstN, lastN       int
	firstLive, lastLive uint64
	perObject           float64 // live bytes per object kept; 0 before two collections
}

// observe records the state after n objects: the live heap the last
// collection found, and the GC cycles completed so far.
func (m *liveModel) observe(n int, live, cycles uint64) {
	if cycles == m.cycles {
		return
	}
	m.cycles = cycles
	m.seen++
	m.lastN, m.lastLive = n, live
	if m.seen == 1 {
		m.firstN, m.firstLive = n, live
		return
	}
	m.perObject = 0
	if n > m.firstN && live > m.firstLive {
		m.perObject = float64(live-m.firstLive) / float64(n-m.firstN)
	}
}

// project returns the projected live heap after n objects, given the live
// heap the last collection found.
func (m *liveModel) project(n int, live uint64) uint64 {
	if m.perObject <= 0 || n <= m.lastN {
		return live
	}
	return live + uint64(m.perObject*float64(n-m.lastN))
}

// noEnv reads no environment: the environment is read once per list, by
// NewPacer.
func noEnv(string) string { return "" }
