package conformance

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/cache"
)

// eventKind is what a handler was called for.
type eventKind string

const (
	evAdd    eventKind = "add"
	evUpdate eventKind = "update"
	evDelete eventKind = "delete"
)

// toldEvent is one call of a subject's event handler, as recorded.
type toldEvent struct {
	kind    eventKind
	key, rv string
	// obj is a deep copy of the object the handler got (the new object of an
	// update, the object of a delete or of its tombstone), taken when it got
	// it, normalized: a later change in place of the cached object does not
	// reach it.
	obj kruntime.Object
	// tombstone is set for a delete that came as DeletedFinalStateUnknown.
	tombstone bool
	// unchanged is set for an update whose old and new objects have the same
	// resourceVersion: client-go hands one for every object a re-list finds
	// unchanged; the event streams leave them out.
	unchanged bool
	// initial is set for an add told as one of the informer's initial list
	// (OnAdd's isInInitialList).
	initial bool
	// phase is the program's phase when the handler was called (see Run).
	phase int
	at    time.Time
}

// recorder is an event handler that applies every event to its own state and
// checks each one against what it was told before, per key:
//
//   - an add comes only for a key it does not hold, an update or a delete
//     only for one it holds;
//   - resourceVersions go forwards: each event's is newer than the last one
//     of the key, but for an update of an unchanged object and a tombstone,
//     which carry the last one again;
//   - an update's old object equals (semantically) the object it was told
//     last for the key, and an update that keeps the resourceVersion keeps
//     the object;
//   - a delete's object equals the last object it was told, but for the
//     resourceVersion (a deletion, a move out of the selector and a
//     re-list's delete carry a newer one); a tombstone's equals it exactly;
//   - the adds told as of the initial list (isInInitialList) come first:
//     none after an event that was not (client-go sets the flag until its
//     first list has been handed over, then never again).
//
// With keep set (object mode, Run's subjects) it keeps a deep copy of every
// object it is told, for the content and event-stream checks; it never
// changes an object it is given. Without (the shard harness's replicas, whose
// events come as lines) it checks keys and resourceVersions only.
type recorder struct {
	keep  bool
	phase *atomic.Int32 // Run's current phase; nil outside Run
	// ordered checks, across keys, that every event after the initial list
	// comes in resourceVersion order (see checkOrder): leanstore's promise,
	// not client-go's, whose re-list hands its objects in list order.
	ordered bool

	mu         sync.Mutex
	state      state                      // key -> resourceVersion
	objs       map[string]kruntime.Object // key -> the last object told (object mode)
	last       map[string]string          // key -> newest resourceVersion seen
	newest     string                     // newest resourceVersion told after the initial list (ordered)
	newestKey  string
	pastFirst  string // the first event told that was not of the initial list (object mode)
	events     int
	log        []toldEvent // object mode
	violations []string
}

func newRecorder() *recorder {
	return &recorder{state: state{}, last: map[string]string{}}
}

// newObjectRecorder is a recorder in object mode, recording phase with each
// event.
func newObjectRecorder(phase *atomic.Int32) *recorder {
	r := newRecorder()
	r.keep, r.phase, r.objs = true, phase, map[string]kruntime.Object{}
	return r
}

func (r *recorder) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { r.saw(evAdd, nil, obj, initial) },
		UpdateFunc: func(old, obj any) { r.saw(evUpdate, old, obj, false) },
		DeleteFunc: func(obj any) { r.saw(evDelete, nil, obj, false) },
	}
}

// violate records a broken check; the caller holds r.mu.
func (r *recorder) violate(format string, args ...any) {
	if len(r.violations) < 50 {
		r.violations = append(r.violations, fmt.Sprintf(format, args...))
	} else if len(r.violations) == 50 {
		r.violations = append(r.violations, "(more violations left out)")
	}
}

// saw records one call of the handler; initial is set for an add of the
// informer's initial list.
func (r *recorder) saw(what eventKind, old, obj any, initial bool) {
	tombstone := false
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, tombstone = t.Obj, true
	}
	m, err := metaOf(obj)
	if err != nil {
		r.mu.Lock()
		r.violate("%s of %T without metadata", what, obj)
		r.mu.Unlock()
		return
	}
	k, rv := key(m.GetNamespace(), m.GetName()), m.GetResourceVersion()
	if !r.keep {
		r.sawKey(string(what), k, rv, what == evDelete)
		return
	}
	ro, ok := obj.(kruntime.Object)
	if !ok {
		r.mu.Lock()
		r.violate("%s of %s: %T is no runtime.Object", what, k, obj)
		r.mu.Unlock()
		return
	}
	// The copy only reads the cached object, which listers and other
	// handlers may be reading too. It is normalized: one informer decodes an
	// object with or without its TypeMeta depending on the path (see
	// normalized).
	ev := toldEvent{kind: what, key: k, rv: rv, obj: normalized(ro.DeepCopyObject()), tombstone: tombstone, initial: initial, at: time.Now()}
	if r.phase != nil {
		ev.phase = int(r.phase.Load())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkEvent(&ev, old)
	switch {
	case !initial && r.pastFirst == "":
		r.pastFirst = fmt.Sprintf("%s of %s at resourceVersion %s", what, k, rv)
	case initial && r.pastFirst != "":
		r.violate("add of %s at resourceVersion %s told as of the initial list after %s, which was not", k, rv, r.pastFirst)
	}
	if r.ordered && !initial {
		r.checkOrder(&ev)
	}
	r.events++
	r.log = append(r.log, ev)
	r.last[k] = rv
	if what == evDelete {
		delete(r.state, k)
		delete(r.objs, k)
	} else {
		r.state[k] = rv
		r.objs[k] = ev.obj
	}
}

// checkEvent checks ev (and an update's old object) against what the
// handler was told before; the caller holds r.mu.
func (r *recorder) checkEvent(ev *toldEvent, old any) {
	prev, held := r.objs[ev.key]
	prevRV := r.state[ev.key]
	switch ev.kind {
	case evAdd:
		if held {
			r.violate("add of %s at resourceVersion %s while it holds it at %s: a second add without a delete between", ev.key, ev.rv, prevRV)
		}
	case evUpdate, evDelete:
		if !held {
			r.violate("%s of %s at resourceVersion %s, which it does not hold", ev.kind, ev.key, ev.rv)
			return
		}
	}
	if ev.kind == evUpdate {
		oldObj, ok := old.(kruntime.Object)
		if !ok {
			r.violate("update of %s: the old object is %T", ev.key, old)
			return
		}
		if d := semanticDiff(prev, normalized(oldObj.DeepCopyObject())); d != "" {
			r.violate("update of %s to resourceVersion %s: the old object is not the last one the handler was told (resourceVersion %s) (-told +old):\n%s", ev.key, ev.rv, prevRV, d)
		}
		if ev.rv == prevRV {
			ev.unchanged = true
			if d := semanticDiff(prev, ev.obj); d != "" {
				r.violate("update of %s keeps resourceVersion %s but changes the object (-told +new):\n%s", ev.key, ev.rv, d)
			}
			return
		}
	}
	if ev.kind == evDelete && held {
		want := prev
		if !ev.tombstone {
			want = withResourceVersion(prev, ev.rv)
		}
		if d := semanticDiff(want, ev.obj); d != "" {
			r.violate("delete of %s at resourceVersion %s (tombstone %v): the object is not the last one the handler was told (resourceVersion %s) (-told +deleted):\n%s", ev.key, ev.rv, ev.tombstone, prevRV, d)
		}
		if ev.tombstone {
			if ev.rv != prevRV {
				r.violate("tombstone of %s at resourceVersion %s, not at the last one told, %s", ev.key, ev.rv, prevRV)
			}
			return
		}
	}
	if last, ok := r.last[ev.key]; ok {
		if c, err := resourceversion.CompareResourceVersion(ev.rv, last); err == nil && c <= 0 {
			r.violate("%s of %s at resourceVersion %s after %s: not newer", ev.kind, ev.key, ev.rv, last)
		}
	}
}

// checkOrder checks that ev, told after the initial list, is not older than
// any event told before it after the initial list, whatever the key: a watch
// hands events in resourceVersion order, and leanstore's re-list inside the
// watch hands its changes oldest first and its deletions, at the list's
// resourceVersion, after them (a re-list that handed its deletions first
// would take the informer's LastSyncResourceVersion back while the older
// changes are queued). An update of an unchanged object and a tombstone carry
// the key's last resourceVersion again and are left out. The caller holds
// r.mu.
func (r *recorder) checkOrder(ev *toldEvent) {
	if ev.unchanged || ev.tombstone || ev.rv == "" {
		return
	}
	if r.newest != "" {
		if c, err := resourceversion.CompareResourceVersion(ev.rv, r.newest); err == nil && c < 0 {
			r.violate("%s of %s at resourceVersion %s after %s of %s: events after the initial list out of resourceVersion order", ev.kind, ev.key, ev.rv, r.newest, r.newestKey)
			return
		}
	}
	r.newest, r.newestKey = ev.rv, ev.key
}

// sawKey records an event of the object at key k with resourceVersion rv,
// without its object (the shard harness's replicas report keys and
// resourceVersions only).
func (r *recorder) sawKey(what, k, rv string, deleted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events++
	if prev, ok := r.last[k]; ok {
		if c, err := resourceversion.CompareResourceVersion(rv, prev); err == nil && c < 0 {
			r.violations = append(r.violations, fmt.Sprintf("%s of %s at resourceVersion %s after %s", what, k, rv, prev))
		}
	}
	r.last[k] = rv
	if deleted {
		delete(r.state, k)
	} else {
		r.state[k] = rv
	}
}

func (r *recorder) snapshot() (state, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := make(state, len(r.state))
	for k, v := range r.state {
		s[k] = v
	}
	return s, append([]string(nil), r.violations...)
}

// objects returns the last object told for each key it holds (object mode).
// The objects are the recorder's own copies: callers must not change them.
func (r *recorder) objects() map[string]kruntime.Object {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]kruntime.Object, len(r.objs))
	for k, o := range r.objs {
		out[k] = o
	}
	return out
}

// toldEvents returns what the handler was told, in order (object mode).
func (r *recorder) toldEvents() []toldEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]toldEvent(nil), r.log...)
}
