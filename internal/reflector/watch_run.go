package reflector

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/pkg/failure"
)

// errShortWatch is the error of a watch stream that ended within a second of
// its start, before any event, without a break being seen (see handle).
var errShortWatch = errors.New("the watch stream ended within a second of its start, before any event")

// newLeanWatch wraps inner, a watch from opts.ResourceVersion (opts are the
// reflector's options), and starts handing on its events.
func newLeanWatch(ctx context.Context, shared *watching, inner *probedWatch, opts metav1.ListOptions) *leanWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &leanWatch{watching: shared, inner: inner.w, final: inner.final, peeked: inner.first, opts: opts, rv: opts.ResourceVersion, out: make(chan watch.Event),
		stop: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go w.run(ctx)
	return w
}

func (w *leanWatch) run(ctx context.Context) {
	defer close(w.done)
	defer close(w.out)
	defer func() { w.inner.Stop() }() // inner changes after a re-list
	defer w.cancel()
	defer w.skips.stop()

	var idle <-chan time.Time
	if t := w.idleTimeout; t > 0 {
		w.idle = time.NewTimer(t)
		defer w.idle.Stop()
		idle = w.idle.C
	}
	// ringChanged is closed when the shard ring changes (WithShard): the
	// watch then lists again inside itself (see rebalance).
	ringChanged := w.c.shard.Changed()
	w.restarted()
	for {
		if w.peeked != nil {
			ev := *w.peeked
			w.peeked = nil
			if !w.handle(ctx, ev, true) {
				return
			}
			continue
		}
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case <-idle:
			w.c.retry.WatchStalled(ctx, w.idleTimeout, w.events)
			return // the reflector sees the channel close and watches again from its last resourceVersion
		case <-w.skips.due:
			if !w.flushSkipped(ctx) {
				return
			}
		case <-ringChanged:
			if !w.rebalance(ctx) {
				return
			}
			ringChanged = w.c.shard.Changed()
		case ev, ok := <-w.inner.ResultChan():
			if !w.handle(ctx, ev, ok) {
				return
			}
		}
	}
}

// handle deals with what the inner watch sent (ok false: it closed) and hands
// the reflector what it should see; false means the watch ends.
func (w *leanWatch) handle(ctx context.Context, ev watch.Event, ok bool) bool {
	h := w.c.retry
	if !ok {
		// A stream that broke (cut, undecodable) is resumed inside this
		// watch; one that ended cleanly (the server's time-out) ends it,
		// and the reflector watches again from its last resourceVersion.
		// client-go's JSON stream watcher closes a cut stream as if it
		// ended cleanly: one that ends within a second of its start with
		// no event is no server time-out (those last minutes), and ended
		// it would make the reflector list everything again (a "very
		// short watch"), so it is a break too.
		broken := h.WatchBroken.Swap(false)
		if !broken && ctx.Err() == nil && w.events == 0 && time.Since(w.started) < time.Second {
			broken = true
			h.Report(ctx, FailedAttempt{Reason: failure.WatchFailed}, errShortWatch, 0)
		}
		if !broken || ctx.Err() != nil || !w.resume(ctx) {
			return false
		}
		w.restarted()
		return true
	}
	w.resetIdle()
	// An event of another shard is dropped; the bookmarks that stand for
	// dropped events keep the reflector's resourceVersion current.
	if ev = w.filter(ev); ev.Type == eventSkipped {
		w.counted()
		return w.skipped(ctx, ev)
	}
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
		var err error
		if ev, err = w.stripped(ev); err != nil {
			h.Report(ctx, FailedAttempt{Reason: failure.WatchFailed}, err, 0)
			return false
		}
	case watch.Error:
		return w.watchError(ctx, ev)
	}
	w.counted()
	return w.send(ctx, ev)
}

// watchError deals with an ERROR event, which ends the inner watch; false
// means the watch ends.
func (w *leanWatch) watchError(ctx context.Context, ev watch.Event) bool {
	if ctx.Err() != nil {
		// client-go's stream watcher turns the cancelled read of a watch that
		// is being stopped into an ERROR event: not a failure.
		return false
	}
	h := w.c.retry
	err := apierrors.FromObject(ev.Object)
	if !isExpired(err) {
		// Any other ERROR event ends the stream (client-go's stream watcher
		// stops after it): resume inside this watch.
		h.Report(ctx, FailedAttempt{Reason: failure.WatchError}, err, 0)
		if !w.resume(ctx) {
			return false
		}
		w.restarted()
		return true
	}
	// An expiry on a watch that lived lists at once; one that ends a watch at
	// its start, before any event, waits out a growing backoff, so that a
	// server (or proxy) that answers every watch with 410 costs a bounded
	// number of lists.
	var d time.Duration
	if w.events == 0 && time.Since(w.started) < time.Second {
		d = h.Expiry.Delay()
	} else {
		h.Expiry.Reset()
	}
	h.Report(ctx, FailedAttempt{Reason: failure.WatchError}, err, d)
	healed, alive := w.waitExpiry(ctx, FailedAttempt{Reason: failure.WatchError}, d)
	if !alive || (!healed && !w.relist(ctx)) {
		return false
	}
	w.restarted() // a new watch
	return true
}

// waitExpiry waits d after a watch that expired before delivering anything,
// as watches do from a server (or proxy) that answers every watch with 410.
// Meanwhile it probes every second (probeEvery, retry.go) with a
// watch from the resourceVersion the reflector last got, which is fresh (the
// list right before): when such a watch does not expire at once, the fault is
// gone, the probe becomes the watch, and no list is needed. healed reports that; alive is false when the
// watch was stopped.
func (w *leanWatch) waitExpiry(ctx context.Context, f FailedAttempt, d time.Duration) (healed, alive bool) {
	w.inner.Stop()
	opts := w.opts
	opts.ResourceVersion = w.rv
	p := newWatchProbe(w.c, opts)
	if !w.c.retry.WaitOrHealed(ctx, f, d, p.probe) {
		return false, false
	}
	pw := p.take()
	if pw == nil {
		return false, true
	}
	w.adopt(pw)
	return true, true
}

// resume replaces a broken inner watch with a new one from the
// resourceVersion the reflector last got, after the backoff (probed, see
// watchProbe), without ending the watch the reflector holds: client-go's
// reflector treats a watch that ends within a second without an event as an
// error and lists everything again after its own backoff, which leanstore
// cannot shorten. A resourceVersion that expired meanwhile lists inside the
// watch (relist). False means the watch ends: it was stopped.
func (w *leanWatch) resume(ctx context.Context) bool {
	w.inner.Stop()
	c, h := w.c, w.c.retry
	opts := w.opts
	opts.ResourceVersion = w.rv
	p := newWatchProbe(c, opts)
	if !h.WaitOrHealed(ctx, FailedAttempt{Reason: failure.WatchFailed}, h.Backoff.Delay(), p.probe) {
		return false
	}
	for {
		if pw := p.take(); pw != nil {
			w.adopt(pw)
			return true
		}
		inner, d, err := c.openWatch(ctx, opts, c.watchStreamBroke(ctx))
		if err == nil {
			w.adopt(&probedWatch{w: inner, final: d != nil})
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if isExpired(err) {
			h.Report(ctx, FailedAttempt{Reason: failure.WatchStartFailed}, err, 0)
			return w.relist(ctx)
		}
		if !h.Failed(ctx, FailedAttempt{Reason: failure.WatchStartFailed}, err, p.probe) {
			return false
		}
	}
}
