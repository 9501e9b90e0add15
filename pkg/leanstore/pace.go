package leanstore

import (
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
type pacer struct {
	bound   float64
	n       int
	samples []rtmetrics.Sample
}

const (
	paceEvery  = 64      // objects between yields and heap checks
	minGarbage = 2 << 20 // never collect for less garbage than this
)

func newPacer(bound float64) *pacer {
	return &pacer{bound: bound, samples: []rtmetrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}}
}

// tick is called after each object of a list.
func (p *pacer) tick() {
	if p.n++; p.n%paceEvery != 0 {
		return
	}
	if !p.collect(p.bound) {
		runtime.Gosched()
	}
}

// finish is called when a list is complete, before the reflector replaces the
// store's contents: client-go's replacement allocates about 0.6 KB per object
// (a set of keys, a new items map and index, the events for handlers), and it
// should start from a heap without the list's garbage rather than on top of it.
// One collection per list is cheap next to the list itself, so finish collects
// whatever garbage is left, however little.
func (p *pacer) finish() {
	p.collectAbove(1, finishMinGarbage)
}

// collect runs a collection when the heap in use exceeds bound times the live
// heap by more than minGarbage, and reports whether it did.
func (p *pacer) collect(bound float64) bool {
	return p.collectAbove(bound, minGarbage)
}

// finishMinGarbage is the garbage below which finish does not collect: less than
// a collection's own cost.
const finishMinGarbage = 256 << 10

func (p *pacer) collectAbove(bound float64, minGarbage uint64) bool {
	if p.bound <= 0 {
		return false
	}
	rtmetrics.Read(p.samples)
	inUse, live := p.samples[0].Value.Uint64(), p.samples[1].Value.Uint64()
	if inUse > live+minGarbage && float64(inUse) > bound*float64(live) {
		runtime.GC()
		return true
	}
	return false
}
