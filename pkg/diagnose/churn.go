package diagnose

import (
	"container/list"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
)

// FindingKind is what a churn finding is about.
type FindingKind string

// The kinds of churn findings.
const (
	// FindingLoop: an object rewritten again and again without a spec change,
	// for at least half the window, with new content almost every time: a
	// controller writing a timestamp or another non-deterministic value into
	// status or metadata on every reconcile, and reconciling again on its own
	// write.
	FindingLoop FindingKind = "loop"
	// FindingPingPong: two managers taking ownership of the same fields from
	// each other in turn: two controllers (or a controller and a user) fighting
	// over a field.
	FindingPingPong FindingKind = "ping-pong"
)

// Finding is a reconcile loop or a ping-pong seen on one object.
type Finding struct {
	Kind     FindingKind
	Resource string
	Object   ObjectRef
	// Managers are, for a ping-pong, the two managers fighting (sorted); for a
	// loop, the managers whose managedFields show they wrote in the window
	// (empty when managedFields were stripped before the detector saw them).
	Managers []string
	// Updates are, for a loop, the updates in the window (among the last
	// WithHistory) that were neither a spec change nor the first write after one;
	// for a ping-pong, the consecutive ownership moves between the two managers.
	Updates int
	// Distinct is, for a loop, how many different contents those updates wrote.
	Distinct int
	// Streak is, for a loop, the object's updates since StreakSince that were
	// neither a spec change nor the first write after one, each less than half
	// a window after the previous: how long the loop has been running.
	Streak      int
	StreakSince time.Time
	// Classes counts the window's updates by class.
	Classes map[Class]int
	// Window is the sliding window the counts refer to.
	Window time.Duration
	// FirstSeen is when the condition was first met, LastSeen when it was last
	// confirmed by an update.
	FirstSeen, LastSeen time.Time
}

// ChurnDetector watches an informer's update stream and flags reconcile loops
// and ping-pong between field managers. Feed it with Handler (register it on
// the informer) or with Observe; read Findings, or export them with WithMetrics.
// It is safe for concurrent use.
//
// It needs managedFields to name managers and to see ping-pong: put it on an
// informer whose objects still carry them (before a transform strips them).
// Without managedFields, loops are still found.
//
// Memory is bounded whatever the size of the cache: at most WithMaxObjects
// objects are tracked (the least recently updated is dropped first), each with
// about 400 bytes of bookkeeping and at most WithHistory recent updates of 24
// bytes; an object quiet for WithForgetAfter is dropped; at most
// WithMaxFindings findings are kept. With the defaults (5000 objects, history
// 30) that is under 6 MB (TestMemoryBound measures 5.5 MB).
type ChurnDetector struct {
	o options

	mu       sync.Mutex
	objects  map[ObjectRef]*tracked
	lru      *list.List // of *tracked, most recently updated first
	findings map[findingKey]*Finding
	names    []string // interned manager names; id 0 is "no manager"
	ids      map[string]uint16
	updates  [ClassUnknownBody + 1]uint64
	evicted  uint64
}

type findingKey struct {
	kind FindingKind
	ref  ObjectRef
}

// event is one update as the detector keeps it (24 bytes).
type event struct {
	at          int64 // unix nanoseconds
	fingerprint uint64
	writer      uint16 // first writer seen in managedFields, 0 if none
	took, from  uint16 // an ownership move: took from from; 0 if none
	class       Class
}

type tracked struct {
	ref    ObjectRef
	events []event // a ring once it holds history events; next is the oldest
	next   int
	last   int64
	elem   *list.Element
	// churnSince is when the current run of unprovoked updates began, and
	// churnLast its latest update: a run lasts while its updates come less than
	// half a window apart. The history alone cannot tell: at a few writes a
	// second, it spans a second or two.
	churnSince, churnLast int64
	churnCount            int
}

// NewChurnDetector returns a detector configured by opts (WithWindow,
// WithLoopThreshold, WithPingPongTurns, WithMaxObjects, ...), or an error
// naming the first option out of range or a failed WithMetrics
// registration.
func NewChurnDetector(opts ...ChurnOption) (*ChurnDetector, error) {
	o, err := buildChurn(opts)
	if err != nil {
		return nil, err
	}
	d := &ChurnDetector{
		o:        o,
		objects:  map[ObjectRef]*tracked{},
		lru:      list.New(),
		findings: map[findingKey]*Finding{},
		names:    []string{""},
		ids:      map[string]uint16{},
	}
	if err := o.register(churnCollector{d}); err != nil {
		return nil, err
	}
	return d, nil
}

// Handler returns an event handler to register on the informer: updates go to
// Observe, deletes to Forget; adds are ignored.
func (d *ChurnDetector) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{UpdateFunc: d.Observe, DeleteFunc: d.Forget}
}

// Observe records one update, as an informer delivers it: the object before and
// after. Resyncs (same resourceVersion) and values without object metadata are
// ignored.
func (d *ChurnDetector) Observe(oldObj, newObj any) {
	o, ok1 := objectOf(oldObj)
	n, ok2 := objectOf(newObj)
	if !ok1 || !ok2 {
		return
	}
	c, ok := classify(oldObj, newObj, o, n)
	if !ok {
		return
	}
	t := turnOf(o.GetManagedFields(), n.GetManagedFields())
	now := d.o.clock.Now()

	d.mu.Lock()
	defer d.mu.Unlock()
	d.updates[c.class]++
	e := event{at: now.UnixNano(), fingerprint: c.fingerprint, class: c.class}
	if len(t.writers) > 0 {
		e.writer = d.intern(t.writers[0])
	}
	if t.took != "" {
		e.took, e.from = d.intern(t.took), d.intern(t.from)
	}
	tr := d.track(refOf(n), now)
	if unprovoked(c.class, tr) {
		if tr.churnSince == 0 || e.at-tr.churnLast > int64(d.o.window/2) {
			tr.churnSince, tr.churnCount = e.at, 0
		}
		tr.churnLast = e.at
		tr.churnCount++
	}
	tr.push(e, d.o.history)
	d.evaluate(tr, now)
	d.sweep(now)
}

// Forget drops the history of a deleted object. Its findings stay until they
// expire (WithRetention).
func (d *ChurnDetector) Forget(obj any) {
	m, ok := objectOf(obj)
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if tr, ok := d.objects[refOf(m)]; ok {
		d.drop(tr)
	}
}

// Tracked is the number of objects whose history is kept.
func (d *ChurnDetector) Tracked() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.objects)
}

// Findings returns the current findings, oldest first. A finding stays until
// it has not been confirmed for WithRetention.
func (d *ChurnDetector) Findings() []Finding {
	now := d.o.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expireFindings(now)
	out := make([]Finding, 0, len(d.findings))
	for _, f := range d.findings {
		c := *f
		c.Managers = slices.Clone(f.Managers)
		c.Classes = make(map[Class]int, len(f.Classes))
		for k, v := range f.Classes {
			c.Classes[k] = v
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Finding) int {
		if c := a.FirstSeen.Compare(b.FirstSeen); c != 0 {
			return c
		}
		if c := strings.Compare(a.Object.String(), b.Object.String()); c != 0 {
			return c
		}
		return strings.Compare(string(a.Kind), string(b.Kind))
	})
	return out
}

func (d *ChurnDetector) intern(name string) uint16 {
	if id, ok := d.ids[name]; ok {
		return id
	}
	if len(d.names) >= 1<<16-1 {
		return 0 // more managers than anyone has: stop naming them
	}
	id := uint16(len(d.names))
	d.names = append(d.names, name)
	d.ids[name] = id
	return id
}

// track returns the object's history, created if new, and marks it most
// recently updated; objects beyond the cap are dropped, least recent first.
func (d *ChurnDetector) track(ref ObjectRef, now time.Time) *tracked {
	tr, ok := d.objects[ref]
	if ok {
		d.lru.MoveToFront(tr.elem)
	} else {
		tr = &tracked{ref: ref}
		tr.elem = d.lru.PushFront(tr)
		d.objects[ref] = tr
		for len(d.objects) > d.o.maxObjects {
			d.drop(d.lru.Back().Value.(*tracked))
			d.evicted++
		}
	}
	tr.last = now.UnixNano()
	return tr
}

func (d *ChurnDetector) drop(tr *tracked) {
	d.lru.Remove(tr.elem)
	delete(d.objects, tr.ref)
}

// sweep drops objects that have been quiet for forgetAfter. The list is in
// update order, so this stops at the first object still active.
func (d *ChurnDetector) sweep(now time.Time) {
	cut := now.Add(-d.o.forgetAfter).UnixNano()
	for e := d.lru.Back(); e != nil; e = d.lru.Back() {
		tr := e.Value.(*tracked)
		if tr.last >= cut {
			return
		}
		d.drop(tr)
	}
}

// unprovoked reports whether an update of class c, coming after the object's
// latest recorded update, is churn: neither a spec change nor the first write
// after one (a controller reporting on a new spec).
func unprovoked(c Class, t *tracked) bool {
	if c == ClassSpec {
		return false
	}
	if len(t.events) == 0 {
		return true
	}
	latest := (t.next + len(t.events) - 1) % len(t.events)
	return t.events[latest].class != ClassSpec
}

func (t *tracked) push(e event, history int) {
	if len(t.events) < history {
		if len(t.events) == cap(t.events) {
			// Grow by doubling up to history, not beyond: most objects see a
			// few updates, and the ring never needs more.
			grown := make([]event, len(t.events), min(max(2*cap(t.events), 2), history))
			copy(grown, t.events)
			t.events = grown
		}
		t.events = append(t.events, e)
		return
	}
	t.events[t.next] = e
	t.next = (t.next + 1) % len(t.events)
}

// window returns the object's events not older than the window, oldest first.
func (t *tracked) window(cut int64) []event {
	out := make([]event, 0, len(t.events))
	for i := range t.events {
		if e := t.events[(t.next+i)%len(t.events)]; e.at >= cut {
			out = append(out, e)
		}
	}
	return out
}

// evaluate checks one object's window for a loop and for ping-pong.
func (d *ChurnDetector) evaluate(tr *tracked, now time.Time) {
	events := tr.window(now.Add(-d.o.window).UnixNano())
	classes := map[Class]int{}
	var writers []string
	var fingerprints []uint64
	answer := false
	for _, e := range events {
		classes[e.class]++
		if e.writer != 0 && !slices.Contains(writers, d.names[e.writer]) {
			writers = append(writers, d.names[e.writer])
		}
		switch {
		case e.class == ClassSpec:
			answer = true
		case answer:
			// The first write after a spec change is a controller reporting on
			// the new spec: an answer, not churn.
			answer = false
		default:
			fingerprints = append(fingerprints, e.fingerprint)
		}
	}
	slices.Sort(writers)

	// A loop: many unprovoked updates without a spec change, sustained over at
	// least half the window (a burst, such as a rollout reporting progress, ends
	// sooner), most of them writing content not seen before in the window. Two
	// writers flipping one value write only two contents: that is ping-pong.
	n := len(fingerprints)
	slices.Sort(fingerprints)
	distinct := len(slices.Compact(fingerprints))
	sustained := tr.churnSince != 0 && now.UnixNano()-tr.churnSince >= int64(d.o.window/2)
	if n >= d.o.loopUpdates && 2*distinct > n && sustained {
		d.record(FindingLoop, tr.ref, now, func(f *Finding) {
			f.Managers, f.Updates, f.Distinct, f.Classes = writers, n, distinct, classes
			f.Streak, f.StreakSince = tr.churnCount, time.Unix(0, tr.churnSince)
		})
	}

	// Ping-pong: the latest ownership moves alternate between two managers.
	var a, b uint16
	run := 0
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.took == 0 {
			continue
		}
		if run == 0 {
			a, b, run = e.took, e.from, 1
			continue
		}
		want := [2]uint16{b, a} // the move before A took from B is B taking from A
		if run%2 == 0 {
			want = [2]uint16{a, b}
		}
		if e.took != want[0] || e.from != want[1] {
			break
		}
		run++
	}
	if run >= d.o.pingPongTurns {
		pair := []string{d.names[a], d.names[b]}
		slices.Sort(pair)
		d.record(FindingPingPong, tr.ref, now, func(f *Finding) {
			f.Managers, f.Updates, f.Classes = pair, run, classes
		})
	}
}

func (d *ChurnDetector) record(kind FindingKind, ref ObjectRef, now time.Time, fill func(*Finding)) {
	k := findingKey{kind, ref}
	f, ok := d.findings[k]
	if !ok {
		d.expireFindings(now)
		for len(d.findings) >= d.o.maxFindings {
			d.dropStalestFinding()
		}
		f = &Finding{Kind: kind, Resource: d.o.resource, Object: ref, Window: d.o.window, FirstSeen: now}
		d.findings[k] = f
	}
	fill(f)
	f.LastSeen = now
}

func (d *ChurnDetector) expireFindings(now time.Time) {
	for k, f := range d.findings {
		if now.Sub(f.LastSeen) > d.o.retention {
			delete(d.findings, k)
		}
	}
}

func (d *ChurnDetector) dropStalestFinding() {
	var stalest findingKey
	var at time.Time
	first := true
	for k, f := range d.findings {
		if first || f.LastSeen.Before(at) {
			stalest, at, first = k, f.LastSeen, false
		}
	}
	delete(d.findings, stalest)
}
