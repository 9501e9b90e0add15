package leanstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/pkg/failure"
)

// leanWatch wraps a watch: it strips each object before the reflector sees it,
// reports ERROR events (which client-go's reflector only logs at high verbosity),
// and ends the watch when it has been silent for longer than the idle timeout.
// client-go sets a watch time-out only on the server side, so a connection that
// stalls without closing would otherwise leave the cache stale indefinitely.
type leanWatch struct {
	lw    *listWatch
	inner watch.Interface
	// final is true when inner's objects are already stripped (the lean decoder).
	final bool
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
	done  chan struct{}
}

func newLeanWatch(ctx context.Context, lw *listWatch, inner watch.Interface, final bool) *leanWatch {
	w := &leanWatch{lw: lw, inner: inner, final: final, out: make(chan watch.Event), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run(ctx)
	return w
}

func (w *leanWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop ends the watch and waits until its goroutine has exited.
func (w *leanWatch) Stop() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

func (w *leanWatch) run(ctx context.Context) {
	defer close(w.done)
	defer close(w.out)
	defer w.inner.Stop()

	idleTimeout := w.lw.opts.idleTimeout
	var idle <-chan time.Time
	var timer *time.Timer
	if idleTimeout > 0 {
		timer = time.NewTimer(idleTimeout)
		defer timer.Stop()
		idle = timer.C
	}
	events := 0
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
				w.lw.report(ctx, Failure{Reason: failure.WatchError}, apierrors.FromObject(ev.Object), 0)
			}
			if ev.Type != watch.Error {
				if events++; events == 1 {
					w.lw.tracker.ok()
					w.lw.backoff.reset()
					w.lw.stalls.Store(0)
				}
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}
}
