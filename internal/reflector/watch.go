package reflector

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
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
	// last advanced (WithShard, watch_shard.go).
	skips shardSkips

	// Of the current inner watch, for run's goroutine only: the events it
	// delivered, when it started, and the timer of its idle time-out (nil
	// when there is none).
	events  int
	started time.Time
	idle    *time.Timer
}

// watching is what the watches of one informer share, from its ListWatch.
type watching struct {
	c *conn
	// list is the informer's list (lister.list), for a re-list inside the
	// watch (watch_relist.go).
	list func(ctx context.Context, rv string) (listResult, error)
	// next holds a streaming list's stream, which a re-list's watch
	// continues on, and the word that a re-list was cut short.
	next        *handoff
	idleTimeout time.Duration
	// example is an empty object of the informer's type, for bookmarks.
	example runtime.Object
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
