package leanstore

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// A watch event of another shard is dropped, but the watch's resourceVersion
// must still advance: the reflector watches again from the last version it
// was handed whenever a watch ends (the server ends each after 5 to 10
// minutes), and a replica that holds little of a busy resource would
// otherwise resume from a version the server's watch cache no longer has, get
// 410 Gone and list everything again. So a dropped event becomes a bookmark
// at its resourceVersion: at once when none was sent for skippedBookmarkEvery,
// otherwise when that time has passed, unless an event of this shard, which
// advances the reflector just as well, was sent in between. The server's own
// bookmarks (about one a minute) are not enough: the watch cache may keep
// less than a minute of a busy resource's history.

// skippedBookmarkEvery bounds how often a watch sends a bookmark for the
// events it dropped: one object per second at most, however busy the
// resource.
var skippedBookmarkEvery = time.Second

// eventSkipped is the event type of an object of another shard, from the lean
// decoder to the watch that reads it; the reflector never sees one.
const eventSkipped watch.EventType = "leanstore.cachetune.dev/Skipped"

// skippedObject carries the resourceVersion of a dropped event.
type skippedObject struct{ rv string }

func (s *skippedObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (s *skippedObject) DeepCopyObject() kruntime.Object { c := *s; return &c }

func skippedEvent(rv string) watch.Event {
	return watch.Event{Type: eventSkipped, Object: &skippedObject{rv: rv}}
}

// isObjectEvent reports whether an event carries an object of the resource.
func isObjectEvent(t watch.EventType) bool {
	return t == watch.Added || t == watch.Modified || t == watch.Deleted
}

// shardSkips is a watch's record of the events it dropped since it last
// advanced the reflector.
type shardSkips struct {
	// pending is the resourceVersion of the last dropped event not yet
	// covered by an event or bookmark sent; "" when none.
	pending  string
	lastMark time.Time
	timer    *time.Timer
	// due fires when a bookmark for pending is due; nil when none is.
	due <-chan time.Time
}

func (s *shardSkips) stop() {
	if s.timer != nil {
		s.timer.Stop()
	}
}

// filter turns an event of another shard into a skipped one. Events from the
// lean decoder come filtered already; this filters those the client decoded.
func (w *leanWatch) filter(ev watch.Event) watch.Event {
	if w.final || w.lw.shard == nil || !isObjectEvent(ev.Type) || w.lw.shard.owns(ev.Object) {
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
	w.lw.shard.skippedEvents.Add(1)
	so, _ := ev.Object.(*skippedObject)
	if so == nil || so.rv == "" {
		return true
	}
	s := &w.skips
	s.pending = so.rv
	since := time.Since(s.lastMark)
	if since >= skippedBookmarkEvery {
		return w.flushSkipped(ctx)
	}
	if s.due == nil {
		if s.timer == nil {
			s.timer = time.NewTimer(skippedBookmarkEvery - since)
		} else {
			s.timer.Reset(skippedBookmarkEvery - since)
		}
		s.due = s.timer.C
	}
	return true
}

// flushSkipped sends a bookmark at the last dropped event's resourceVersion,
// if no event sent since has covered it.
func (w *leanWatch) flushSkipped(ctx context.Context) bool {
	s := &w.skips
	if s.timer != nil {
		s.timer.Stop()
	}
	s.due = nil
	if s.pending == "" {
		return true
	}
	bm, ok := w.lw.bookmark(s.pending, nil)
	if !ok {
		s.pending = ""
		return true
	}
	s.lastMark = time.Now()
	return w.send(ctx, watch.Event{Type: watch.Bookmark, Object: bm})
}

// rebalance brings the informer to the membership's latest ring: a list
// inside the watch, whose differences from the handed set are the objects that came
// to this replica (ADDED) and those that went to another (DELETED). A ring
// change that moves nothing to or from this replica needs no list. False
// means the watch ends (see relist).
func (w *leanWatch) rebalance(ctx context.Context) bool {
	f := w.lw.shard
	st := f.m.Current()
	if !f.moved(st) {
		f.advance(st)
		return true
	}
	w.lw.tracker.logger.Info("shard ring changed: listing again inside the watch", "self", f.m.Self(),
		"members", st.Members(), "generation", st.Generation())
	return w.relist(ctx)
}
