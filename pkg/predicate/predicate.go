package predicate

import (
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Predicate decides whether an informer event should reach a handler. obj, oldObj
// and newObj are what client-go delivers: typed objects, *unstructured.Unstructured
// or *metav1.PartialObjectMetadata, and on delete possibly a
// cache.DeletedFinalStateUnknown tombstone. Implementations must be safe for
// concurrent use: one predicate may serve several informers.
//
// The reconcile loop and Handler accept any Predicate; every predicate this
// package returns is a *Counted, which also counts its decisions.
type Predicate interface {
	// Name identifies the predicate in Stats, metrics and logs.
	Name() string
	// Create reports whether an add event passes.
	Create(obj any) bool
	// Update reports whether an update event passes.
	Update(oldObj, newObj any) bool
	// Delete reports whether a delete event passes.
	Delete(obj any) bool
}

// Event is the kind of informer event a predicate judged.
type Event int

// The three informer events.
const (
	EventCreate Event = iota
	EventUpdate
	EventDelete
)

func (e Event) String() string {
	switch e {
	case EventCreate:
		return "create"
	case EventUpdate:
		return "update"
	case EventDelete:
		return "delete"
	}
	return "unknown"
}

// Counts are the decisions a predicate made on one kind of event.
type Counts struct {
	Passed   uint64
	Filtered uint64
}

// Stats are a predicate's decisions per event kind since it was built.
type Stats struct {
	Create Counts
	Update Counts
	Delete Counts
}

// Passed is the number of events of every kind that passed.
func (s Stats) Passed() uint64 { return s.Create.Passed + s.Update.Passed + s.Delete.Passed }

// Filtered is the number of events of every kind that were dropped.
func (s Stats) Filtered() uint64 {
	return s.Create.Filtered + s.Update.Filtered + s.Delete.Filtered
}

// Funcs are the decisions of a custom predicate, on the event's object metadata.
// A nil func passes every event of its kind. The metav1.Object is the object
// itself for typed objects, unstructured objects and PartialObjectMetadata, so a
// func may type-assert it (for example to *corev1.Pod) to read more than metadata.
type Funcs struct {
	Create func(obj metav1.Object) bool
	Update func(oldObj, newObj metav1.Object) bool
	Delete func(obj metav1.Object) bool
}

// Counted is a Predicate that counts what it passes and what it filters, per
// event kind, with atomic counters: read them with Stats, or export them to
// Prometheus with NewCollector. It is safe for concurrent use.
//
// When an event carries no readable object (a delete tombstone whose final state
// is unknown, a nil object), a Counted predicate passes it without judging: a
// spurious reconcile is cheaper than a silently lost one.
type Counted struct {
	name     string
	create   func(obj any) bool
	update   func(oldObj, newObj any) bool
	delete   func(obj any) bool
	children []Predicate // the operands of a combinator, for NewCollector
	counts   [3][2]atomic.Uint64
}

var _ Predicate = (*Counted)(nil)

// New returns a counted predicate named name that decides with f.
func New(name string, f Funcs) *Counted {
	c := &Counted{name: name}
	if f.Create != nil {
		c.create = func(obj any) bool {
			m, ok := objectOf(obj)
			return !ok || f.Create(m)
		}
	}
	if f.Update != nil {
		c.update = func(oldObj, newObj any) bool {
			o, ok1 := objectOf(oldObj)
			n, ok2 := objectOf(newObj)
			return !ok1 || !ok2 || f.Update(o, n)
		}
	}
	if f.Delete != nil {
		c.delete = func(obj any) bool {
			m, ok := objectOf(obj)
			return !ok || f.Delete(m)
		}
	}
	return c
}

// Named returns a predicate that decides like c under another name, with its own
// counters starting at zero. Call it where the predicate is built, before it
// judges events: predicate.Any(a, b).Named("reconcile-trigger").
func (c *Counted) Named(name string) *Counted {
	return &Counted{name: name, create: c.create, update: c.update, delete: c.delete, children: c.children}
}

// Name implements Predicate.
func (c *Counted) Name() string { return c.name }

// Create implements Predicate.
func (c *Counted) Create(obj any) bool {
	ok := c.create == nil || c.create(obj)
	c.count(EventCreate, ok)
	return ok
}

// Update implements Predicate.
func (c *Counted) Update(oldObj, newObj any) bool {
	ok := c.update == nil || c.update(oldObj, newObj)
	c.count(EventUpdate, ok)
	return ok
}

// Delete implements Predicate.
func (c *Counted) Delete(obj any) bool {
	ok := c.delete == nil || c.delete(obj)
	c.count(EventDelete, ok)
	return ok
}

func (c *Counted) count(e Event, passed bool) {
	i := 1
	if passed {
		i = 0
	}
	c.counts[e][i].Add(1)
}

// Stats returns the decisions made so far. The three event kinds are read one
// after the other, not as one atomic snapshot.
func (c *Counted) Stats() Stats {
	get := func(e Event) Counts {
		return Counts{Passed: c.counts[e][0].Load(), Filtered: c.counts[e][1].Load()}
	}
	return Stats{Create: get(EventCreate), Update: get(EventUpdate), Delete: get(EventDelete)}
}
