package reflector

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
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
	bm, ok := bookmarkObject(w.example, s.pending, nil)
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
	moved, ring := w.c.shard.Moved()
	if !moved {
		return true
	}
	w.c.log.Info("shard ring changed: listing again inside the watch", ring...)
	return w.relist(ctx)
}
