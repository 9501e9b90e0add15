package conformance

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// history is the server's own account of the run's Pods, the reference the
// event streams are checked against: for each kind, a watch straight from
// the server (never through the fault proxy) of every Pod the run ever
// labelled, in its selector or moved out of it, and of the run's mark (see
// writer.mark). From it, ideal derives the events an informer on the run's
// selector must be told, with the object at each resourceVersion in that
// kind's form.
type history struct {
	run   string
	kinds map[string]*kindHistory
	stop  func()
}

// rawEvent is one event of a history watch (the objects of its first list
// come as ADDED).
type rawEvent struct {
	typ     watch.EventType
	key, rv string
	rvNum   uint64
	obj     kruntime.Object
	// in is set when the object carries the run's label value: it is in the
	// informers' selector.
	in bool
}

// kindHistory is one kind's watch and what it saw.
type kindHistory struct {
	kind string

	mu     sync.Mutex
	events []rawEvent
	newest uint64 // the newest resourceVersion seen, bookmarks included
	err    error  // the watch broke for good
}

// historySelector selects every Pod of the run: in its selector, moved out of
// it, and its mark.
func historySelector(run string) string {
	return fmt.Sprintf("%s in (%s,%s,%s)", runLabel, run, outOf(run), markOf(run))
}

func outOf(run string) string  { return "out-" + run }
func markOf(run string) string { return "mark-" + run }

// startHistory lists the run's Pods with each kind's client and watches them
// from there until stop is called.
func startHistory(ctx context.Context, c clients, run string) (*history, error) {
	h := &history{run: run, kinds: map[string]*kindHistory{}}
	sel := historySelector(run)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	h.stop = func() {
		cancel()
		wg.Wait()
	}
	for _, k := range kinds {
		list, watchFn := c.listWatch(k)
		kh := &kindHistory{kind: k}
		h.kinds[k] = kh
		obj, err := list(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			h.stop()
			return nil, fmt.Errorf("history: list %s pods: %w", k, err)
		}
		if err := kh.listed(obj, run); err != nil {
			h.stop()
			return nil, err
		}
		wg.Go(func() { kh.watch(ctx, watchFn, sel, run) })
	}
	return h, nil
}

type (
	listFunc  func(context.Context, metav1.ListOptions) (kruntime.Object, error)
	watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)
)

// listWatch returns the list and watch of the Pods in every namespace with
// kind's client.
func (c clients) listWatch(kind string) (listFunc, watchFunc) {
	switch kind {
	case kindDynamic:
		r := c.dynamic.Resource(podsGVR)
		return func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) { return r.List(ctx, o) }, r.Watch
	case kindMetadata:
		r := c.metadata.Resource(podsGVR)
		return func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) { return r.List(ctx, o) }, r.Watch
	}
	pods := c.typed.CoreV1().Pods("")
	return func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) { return pods.List(ctx, o) }, pods.Watch
}

// listed records the objects of the first list, as ADDED.
func (kh *kindHistory) listed(list kruntime.Object, run string) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return fmt.Errorf("history: %s list: %w", kh.kind, err)
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return fmt.Errorf("history: %s list: %w", kh.kind, err)
	}
	kh.mu.Lock()
	defer kh.mu.Unlock()
	for _, obj := range items {
		kh.add(watch.Added, obj, run)
	}
	kh.newest, _ = strconv.ParseUint(lm.GetResourceVersion(), 10, 64)
	return nil
}

// add records an event; the caller holds kh.mu.
func (kh *kindHistory) add(typ watch.EventType, obj kruntime.Object, run string) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	rv := m.GetResourceVersion()
	n, _ := strconv.ParseUint(rv, 10, 64)
	kh.events = append(kh.events, rawEvent{typ: typ, key: key(m.GetNamespace(), m.GetName()), rv: rv, rvNum: n, obj: obj, in: m.GetLabels()[runLabel] == run})
	kh.newest = max(kh.newest, n)
}

// watch follows the server from the list's resourceVersion until ctx ends,
// watching again from the last resourceVersion when a watch ends. An ERROR
// event (the history would have a gap) ends it for good.
func (kh *kindHistory) watch(ctx context.Context, watchFn watchFunc, sel, run string) {
	kh.mu.Lock()
	rv := strconv.FormatUint(kh.newest, 10)
	kh.mu.Unlock()
	for ctx.Err() == nil {
		w, err := watchFn(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() == nil && apierrors.IsResourceExpired(err) {
				kh.fail(fmt.Errorf("history: %s watch from %s: %w", kh.kind, rv, err))
				return
			}
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				if ctx.Err() == nil {
					kh.fail(fmt.Errorf("history: %s watch from %s: %w", kh.kind, rv, apierrors.FromObject(ev.Object)))
				}
				w.Stop()
				return
			}
			m, err := meta.Accessor(ev.Object)
			if err != nil {
				continue
			}
			rv = m.GetResourceVersion()
			kh.mu.Lock()
			if ev.Type == watch.Bookmark {
				n, _ := strconv.ParseUint(rv, 10, 64)
				kh.newest = max(kh.newest, n)
			} else {
				kh.add(ev.Type, ev.Object, run)
			}
			kh.mu.Unlock()
		}
		w.Stop()
	}
}

func (kh *kindHistory) fail(err error) {
	kh.mu.Lock()
	defer kh.mu.Unlock()
	if kh.err == nil {
		kh.err = err
	}
}

// waitFor waits until every kind's watch has seen resourceVersion rv: the
// history is then complete up to rv, since a watch delivers in order.
func (h *history) waitFor(ctx context.Context, rv string, timeout time.Duration) error {
	want, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return fmt.Errorf("history: resourceVersion %q: %w", rv, err)
	}
	deadline := time.Now().Add(timeout)
	for _, kh := range h.kinds {
		for {
			kh.mu.Lock()
			newest, werr := kh.newest, kh.err
			kh.mu.Unlock()
			if werr != nil {
				return werr
			}
			if newest >= want {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("history: the %s watch did not reach resourceVersion %s within %s (at %d)", kh.kind, rv, timeout, newest)
			}
			sleepCtx(ctx, 20*time.Millisecond)
		}
	}
	return nil
}

// idealEvent is an event an informer on the run's selector must be told, or
// may be told a later version of in its stead after it lists.
type idealEvent struct {
	kind  eventKind
	rv    string
	rvNum uint64
	// obj is the object at rv: the new object of an add or update; for a
	// delete, the object as it was before, at the deletion's (or the move's)
	// resourceVersion, as the server's watch sends it.
	obj kruntime.Object
}

// ideal derives, per key, the events a watch on the run's selector delivers,
// as the API server's watch cache filters them: an object that comes into
// the selector is ADDED, one that moves out of it is DELETED (with its
// previous content at the new resourceVersion), one that stays is MODIFIED,
// and a deletion is DELETED when the object was in.
func (kh *kindHistory) ideal() map[string][]idealEvent {
	kh.mu.Lock()
	defer kh.mu.Unlock()
	out := map[string][]idealEvent{}
	in := map[string]bool{}
	prev := map[string]kruntime.Object{}
	for _, e := range kh.events {
		was := in[e.key]
		switch {
		case e.typ == watch.Deleted && was:
			out[e.key] = append(out[e.key], idealEvent{kind: evDelete, rv: e.rv, rvNum: e.rvNum, obj: e.obj})
		case e.typ == watch.Deleted:
		case e.in && was:
			out[e.key] = append(out[e.key], idealEvent{kind: evUpdate, rv: e.rv, rvNum: e.rvNum, obj: e.obj})
		case e.in:
			out[e.key] = append(out[e.key], idealEvent{kind: evAdd, rv: e.rv, rvNum: e.rvNum, obj: e.obj})
		case was: // moved out of the selector
			out[e.key] = append(out[e.key], idealEvent{kind: evDelete, rv: e.rv, rvNum: e.rvNum, obj: withResourceVersion(prev[e.key], e.rv)})
		}
		in[e.key] = e.in && e.typ != watch.Deleted
		prev[e.key] = e.obj
	}
	return out
}
