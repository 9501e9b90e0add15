package reflector

import (
	"context"
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/pkg/failure"
)

// leanWatch wraps a watch: it strips each object before the reflector sees it,
// records what the reflector was handed (the handed set), reports ERROR events (which
// client-go's reflector only logs at high verbosity), and ends the watch when it
// has been silent for longer than the idle timeout. client-go sets a watch
// time-out only on the server side, so a connection that stalls without closing
// would otherwise leave the cache stale indefinitely.
//
// When the server ends the watch because its resourceVersion is gone (410), the
// watch lists again itself and hands the reflector only what changed (relist);
// the package documentation, "Re-lists inside the watch", says why.
type leanWatch struct {
	*watching
	inner watch.Interface
	// final is true when inner's objects are final: decoded by the lean
	// decoder, which finished each with the shrink pipeline or handed back the
	// cached object, so that nothing is left to strip.
	final bool
	// opts are the reflector's watch options, for the watch after a re-list.
	opts metav1.ListOptions
	// rv is the resourceVersion of the last event handed to the reflector.
	rv string
	// peeked is an event read ahead from inner (by a probe, see watchProbe),
	// handed on before anything else.
	peeked *watch.Event
	out    chan watch.Event
	stop   chan struct{}
	cancel context.CancelFunc
	once   sync.Once
	done   chan struct{}
	// skips are the events of other shards dropped since the reflector was
	// last advanced (WithShard, skips.go).
	skips shardSkips

	// Of the current inner watch, for run's goroutine only: the events it
	// delivered, when it started, the timer of its idle time-out (nil when
	// there is none), and the timer that tells it held (see held).
	events  int
	started time.Time
	idle    *time.Timer
	holds   *time.Timer
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

// restarted records that a new inner watch starts: no event yet, and a fresh
// idle time-out.
func (w *leanWatch) restarted() {
	w.events, w.started = 0, time.Now()
	w.resetIdle()
	if w.holds != nil {
		w.holds.Reset(probeSettle)
	}
}

// held records that the inner watch has stayed open for probeSettle without
// breaking: it works, as a probe's watch that settles does (watchProbe),
// even when nothing changes for it to deliver. Without this, an informer
// that recovered by watching again, with no list, would report its failures
// in a row until the first event or bookmark, a minute or more later on a
// quiet resource.
func (w *leanWatch) held() {
	if w.events == 0 {
		w.c.retry.WatchHeld()
	}
}

func (w *leanWatch) resetIdle() {
	if w.idle != nil {
		w.idle.Reset(w.idleTimeout)
	}
}

// counted counts an event of the inner watch: its first tells that the
// watch works.
func (w *leanWatch) counted() {
	if w.events++; w.events == 1 {
		w.c.retry.Delivered()
	}
}

// stripped returns ev with its object through the shrink pipeline, unless
// it is final already.
func (w *leanWatch) stripped(ev watch.Event) (watch.Event, error) {
	if w.final {
		return ev, nil
	}
	obj, err := w.c.stripped(ev.Object)
	if err != nil {
		return ev, err
	}
	ev.Object = obj
	return ev, nil
}

// send hands ev to the reflector and records it in the handed set; false means the
// watch was stopped.
func (w *leanWatch) send(ctx context.Context, ev watch.Event) bool {
	if _, ok := ev.Object.(*Record); ok {
		// An object the handed set has (an encoded store's, see Record) with
		// the same uid and resourceVersion: the reflector has it already.
		return true
	}
	select {
	case w.out <- ev:
		w.c.handed.Apply(ev)
		if m, err := meta.Accessor(ev.Object); err == nil && m.GetResourceVersion() != "" {
			w.rv = m.GetResourceVersion()
		}
		w.skips.pending = "" // any event advances the reflector past the dropped ones
		return true
	case <-w.stop:
		return false
	case <-ctx.Done():
		return false
	}
}

// adopt makes a watch a probe found working the inner watch.
func (w *leanWatch) adopt(pw *probedWatch) {
	w.inner, w.final, w.peeked = pw.w, pw.final, pw.first
	w.c.report.WatchStarted()
}

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
	w.holds = time.NewTimer(probeSettle)
	defer w.holds.Stop()
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
		case <-w.holds.C:
			w.held()
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

// relist lists again after the server said the watch's resourceVersion is gone,
// hands the reflector the differences from what it has been handed (see
// Handed.Diff) and a bookmark at the list's resourceVersion, and goes on watching
// from there. False means the watch ends: it was stopped, or the new watch
// could not be opened (the reflector then watches again from the bookmark,
// through WatchWithContext's retries).
//
// A stopped relist leaves nothing half-done behind: when the watch stops before
// every difference was handed, the next WatchWithContext makes the reflector
// list again instead of resuming from a resourceVersion that may be past a
// deletion it was never told about.
func (w *leanWatch) relist(ctx context.Context) bool {
	w.inner.Stop()
	res, err := w.list(withReuse(ctx), "")
	if err != nil {
		return false // ctx ended: list retries every other failure
	}
	defer res.done()
	diff := w.c.handed.Diff(res.items, res.rv)
	evs := append(diff.Changed, diff.Deleted...)
	for i, ev := range evs {
		if w.c.packs(ev.Object) {
			ev.Object = w.c.handed.StandIn(ev.Object)
		}
		if !w.send(ctx, ev) {
			w.c.handed.unsent(ev.Object)
			for _, unsent := range evs[i+1:] {
				w.c.handed.unsent(unsent.Object) // placeholders never handed (see recordGoneAt, StandIn)
			}
			w.next.cut()
			return false
		}
	}
	like := res.items
	if w.c.pack != nil {
		like = nil // packed: the informer's example is of its type
	}
	if bm, ok := bookmarkObject(w.example, res.rv, like); ok && !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: bm}) {
		w.next.drop()
		return false
	}
	w.c.shard.Took() // the reflector has this shard's objects of the list's ring (WithShard)
	if p := w.next.take(res.rv); p != nil {
		w.inner, w.final = p.w, p.final
	} else {
		opts := w.opts
		opts.ResourceVersion = res.rv
		inner, d, err := w.c.openWatch(ctx, opts, w.c.watchStreamBroke(ctx))
		if err != nil {
			if ctx.Err() == nil {
				w.c.retry.WatchBroken.Store(true)
				w.c.retry.Report(ctx, FailedAttempt{Reason: failure.WatchStartFailed}, err, 0)
			}
			return false
		}
		w.inner, w.final = inner, d != nil
	}
	w.c.report.WatchStarted()
	return true
}

// filter turns an event of another shard into a skipped one. Events from the
// lean decoder come filtered already; this filters those the client decoded.
func (w *leanWatch) filter(ev watch.Event) watch.Event {
	if w.final || !isObjectEvent(ev.Type) || w.c.shard.Owns(ev.Object) {
		return ev
	}
	rv := ""
	if m, err := meta.Accessor(ev.Object); err == nil {
		rv = m.GetResourceVersion()
	}
	return skippedEvent(rv)
}

// skipped records a dropped event and sends the bookmark that covers it when
// one is due; false means the watch was stopped.
func (w *leanWatch) skipped(ctx context.Context, ev watch.Event) bool {
	w.c.shard.SkippedEvent()
	so, _ := ev.Object.(*skippedObject)
	if so == nil || so.rv == "" {
		return true
	}
	if w.skips.skipped(so.rv) {
		return w.flushSkipped(ctx)
	}
	return true
}

// flushSkipped sends a bookmark at the last dropped event's resourceVersion,
// if no event sent since has covered it.
func (w *leanWatch) flushSkipped(ctx context.Context) bool {
	bm, ok := w.skips.flush(w.example)
	if !ok {
		return true
	}
	return w.send(ctx, watch.Event{Type: watch.Bookmark, Object: bm})
}

// rebalance brings the informer to the membership's latest ring: a list
// inside the watch, whose differences from the handed set are the objects that came
// to this replica (ADDED) and those that went to another (DELETED). A ring
// change that moves nothing to or from this replica needs no list. False
// means the watch ends (see relist).
func (w *leanWatch) rebalance(ctx context.Context) bool {
	moved, ring := w.c.shard.Moved()
	if !moved {
		return true
	}
	w.c.log.Info("shard ring changed: listing again inside the watch", ring...)
	return w.relist(ctx)
}
