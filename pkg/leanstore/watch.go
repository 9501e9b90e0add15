package leanstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/pkg/failure"
)

// leanWatch wraps a watch: it strips each object before the reflector sees it,
// reports ERROR events (which client-go's reflector only logs at high verbosity),
// and ends the watch when it has been silent for longer than the idle timeout.
// client-go sets a watch time-out only on the server side, so a connection that
// stalls without closing would otherwise leave the cache stale indefinitely.
//
// When the server ends the watch because its resourceVersion is gone (410), the
// watch lists again itself, from inside the watch, and hands the reflector only
// what changed: ADDED and MODIFIED events for objects that differ from the store,
// DELETED for stored objects the list no longer has, then a bookmark at the
// list's resourceVersion; then it watches on from there. client-go's own re-list
// replaces the whole store instead, building a second items map, index and key
// set next to the first (about 0.6 KB per object, see docs/memory.md), and sends every handler an
// update per object.
type leanWatch struct {
	lw    *listWatch
	inner watch.Interface
	// final is true when inner's objects are already stripped (the lean decoder).
	final bool
	// opts are the reflector's watch options, for the watch after a re-list.
	opts   metav1.ListOptions
	out    chan watch.Event
	stop   chan struct{}
	cancel context.CancelFunc
	once   sync.Once
	done   chan struct{}
}

func newLeanWatch(ctx context.Context, lw *listWatch, inner watch.Interface, final bool, opts metav1.ListOptions) *leanWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &leanWatch{lw: lw, inner: inner, final: final, opts: opts, out: make(chan watch.Event),
		stop: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go w.run(ctx)
	return w
}

func (w *leanWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop ends the watch and waits until its goroutine has exited.
func (w *leanWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.cancel()
	})
	<-w.done
}

func (w *leanWatch) run(ctx context.Context) {
	defer close(w.done)
	defer close(w.out)
	defer func() { w.inner.Stop() }() // inner changes after a re-list
	defer w.cancel()

	idleTimeout := w.lw.opts.idleTimeout
	var idle <-chan time.Time
	var timer *time.Timer
	if idleTimeout > 0 {
		timer = time.NewTimer(idleTimeout)
		defer timer.Stop()
		idle = timer.C
	}
	events, started := 0, time.Now()
	for {
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case <-idle:
			w.lw.watchBroken.Store(true)
			if events == 0 {
				w.lw.stalls.Add(1)
			}
			w.lw.report(ctx, Failure{Reason: failure.WatchStalled}, stalled(idleTimeout), 0)
			return // the reflector sees the channel close and watches again from its last resourceVersion
		case ev, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			if timer != nil {
				timer.Reset(idleTimeout)
			}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				if w.final {
					break
				}
				obj, err := w.lw.strip.apply(ev.Object, w.lw.gr())
				if err != nil {
					w.lw.report(ctx, Failure{Reason: failure.WatchFailed}, err, 0)
					return
				}
				o, ok := obj.(runtime.Object)
				if !ok {
					w.lw.report(ctx, Failure{Reason: failure.WatchFailed}, fmt.Errorf("%s: transform returned %T, not a runtime.Object", w.lw.gr(), obj), 0)
					return
				}
				ev.Object = o
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				if isExpired(err) && w.lw.store != nil {
					// An expiry on a watch that lived lists at once; one that ends
					// a watch at its start, before any event, waits out a growing
					// backoff, so that a server (or proxy) that answers every
					// watch with 410 costs a bounded number of lists.
					var d time.Duration
					if events == 0 && time.Since(started) < time.Second {
						d = w.lw.expiry.delay()
					} else {
						w.lw.expiry.reset()
					}
					w.lw.report(ctx, Failure{Reason: failure.WatchError}, err, d)
					if !sleep(ctx, d) || !w.relist(ctx) {
						return
					}
					events, started = 0, time.Now() // a new watch
					if timer != nil {
						timer.Reset(idleTimeout)
					}
					continue
				}
				w.lw.report(ctx, Failure{Reason: failure.WatchError}, err, 0)
			}
			if ev.Type != watch.Error {
				if events++; events == 1 {
					w.lw.tracker.ok()
					w.lw.backoff.reset()
					w.lw.expiry.reset()
					w.lw.stalls.Store(0)
				}
			}
			if !w.send(ctx, ev) {
				return
			}
		}
	}
}

// send hands ev to the reflector; false means the watch was stopped.
func (w *leanWatch) send(ctx context.Context, ev watch.Event) bool {
	select {
	case w.out <- ev:
		return true
	case <-w.stop:
		return false
	case <-ctx.Done():
		return false
	}
}

// relist lists again after the server said the watch's resourceVersion is gone,
// sends the reflector the differences from its store and a bookmark at the new
// resourceVersion, and goes on watching from there. False means the watch ends:
// it was stopped, or the new watch could not be opened (the reflector then
// watches again from the bookmark, through WatchWithContext's retries).
func (w *leanWatch) relist(ctx context.Context) bool {
	w.inner.Stop()
	res, err := w.lw.list(ctx, "")
	if err != nil {
		return false // ctx ended: list retries every other failure
	}
	if !w.lw.diff(res.items, func(ev watch.Event) bool { return w.send(ctx, ev) }) {
		return false
	}
	if bm, ok := w.lw.bookmark(res.rv, res.items); ok && !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: bm}) {
		return false
	}
	if p := w.lw.takePending(res.rv); p != nil {
		w.inner, w.final = p.w, p.lean
	} else {
		opts := w.opts
		opts.ResourceVersion = res.rv
		inner, d, err := w.lw.openWatch(ctx, w.lw.opts.listOptions(opts), w.lw.watchStreamBroke(ctx))
		if err != nil {
			if ctx.Err() == nil {
				w.lw.watchBroken.Store(true)
				w.lw.report(ctx, Failure{Reason: failure.WatchStartFailed}, err, 0)
			}
			return false
		}
		w.inner, w.final = inner, d != nil
	}
	w.lw.tracker.watchStarted()
	return true
}
