package leanstore

import (
	"math"
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
)

// pacer runs between the objects of a list. Every few objects it lets other
// goroutines run (decoding thousands of objects in one go starves health probes
// and every other goroutine on a small GOMAXPROCS), and it keeps the heap within
// heapBound times the live heap: a list decodes objects faster than the garbage
// collector's pacing expects, and without a bound the heap grows to about twice
// the live heap (GOGC=100) before a collection, which is the start-up and re-list
// spike this package exists to remove. When the heap in use exceeds the bound by
// more than minGarbage, the pacer runs a collection itself. A process whose heap is
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
type pacer struct {
	bound   float64
	n       int
	forced  int
	off     string // why the bound does not apply; "" when it does
	tr      *tracker
	samples []rtmetrics.Sample
}

const (
	paceEvery  = 64      // objects between yields and heap checks
	minGarbage = 2 << 20 // never collect for less garbage than this
)

// maxForcedPerList caps the collections one list forces, finish's included.
// BenchmarkPacedList (bench/results/go-bench.txt) measured, for a list of 10,000
// Pods at the default bound, about 35 collections when the list keeps 20 KB of
// each Pod and 120 when it keeps 3.5 KB (sharing: more garbage per byte kept);
// capped at 64, the second list's peak rose from 1.3 to 2.4 times its live heap.
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
)

// newPacer returns the pacer of one list with the given heap bound.
func newPacer(bound float64) *pacer {
	p := &pacer{bound: bound, samples: []rtmetrics.Sample{
		sampleHeapInUse: {Name: "/memory/classes/heap/objects:bytes"},
		sampleHeapLive:  {Name: "/gc/heap/live:bytes"},
		sampleGOGC:      {Name: "/gc/gogc:percent"},
		sampleMemLimit:  {Name: "/gc/gomemlimit:bytes"},
	}}
	if bound > 0 {
		rtmetrics.Read(p.samples)
		p.off = gcPolicyChosen(os.Getenv, p.samples[sampleGOGC].Value.Uint64(), p.samples[sampleMemLimit].Value.Uint64())
	}
	return p
}

// reportTo makes p report to tr, the tracker of the informer that lists: the
// collections it forces (Status.ForcedGCs and the forced_gcs_total counter) and
// why the bound does not apply (Status.HeapBoundOff). It returns p.
func (p *pacer) reportTo(tr *tracker) *pacer {
	p.tr = tr
	tr.heapBound(p.off)
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

// tick is called after each object of a list.
func (p *pacer) tick() {
	if p.n++; p.n%paceEvery != 0 {
		return
	}
	if !p.collectAbove(p.bound, minGarbage, maxForcedPerList-1) {
		runtime.Gosched()
	}
}

// finish is called when a list is complete, before the reflector replaces the
// store's contents: client-go's replacement allocates per object (a set of
// keys, a new items map and index, the events for handlers; docs/memory.md,
// "Two stores during a re-list", measures it), and it
// should start from a heap without the list's garbage rather than on top of it.
// One collection per list is cheap next to the list itself, so finish collects
// whatever garbage is left, however little. tick leaves it one collection of
// the list's maximum.
func (p *pacer) finish() {
	p.collectAbove(1, finishMinGarbage, maxForcedPerList)
}

// finishMinGarbage is the garbage below which finish does not collect: less than
// a collection's own cost.
const finishMinGarbage = 256 << 10

// collectAbove runs a collection when the heap bound applies, fewer than max
// collections were forced in this list, and the heap in use exceeds bound times
// the live heap by more than minGarbage. It reports whether it collected.
func (p *pacer) collectAbove(bound float64, minGarbage uint64, max int) bool {
	if p.bound <= 0 || p.off != "" || p.forced >= max {
		return false
	}
	rtmetrics.Read(p.samples)
	if off := gcPolicyChosen(noEnv, p.samples[sampleGOGC].Value.Uint64(), p.samples[sampleMemLimit].Value.Uint64()); off != "" {
		// Set during the list: respected from now on.
		p.off = off
		if p.tr != nil {
			p.tr.heapBound(off)
		}
		return false
	}
	inUse, live := p.samples[sampleHeapInUse].Value.Uint64(), p.samples[sampleHeapLive].Value.Uint64()
	if inUse > live+minGarbage && float64(inUse) > bound*float64(live) {
		runtime.GC()
		p.forced++
		if p.tr != nil {
			p.tr.forcedGC()
		}
		return true
	}
	return false
}

// noEnv reads no environment: the environment is read once per list, by
// newPacer.
func noEnv(string) string { return "" }

// heapBound records whether the heap bound applies to the informer's lists.
func (t *tracker) heapBound(off string) {
	t.mu.Lock()
	t.st.HeapBoundOff = off
	t.mu.Unlock()
}

// forcedGC counts a collection the heap bound ran.
func (t *tracker) forcedGC() {
	t.mu.Lock()
	t.st.ForcedGCs++
	t.mu.Unlock()
	if t.metrics != nil {
		t.metrics.forcedGCs.WithLabelValues(t.informer, t.resource).Inc()
	}
}
