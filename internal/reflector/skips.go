package reflector

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// eventSkipped is the event type of an object of another shard, from the lean
// decoder to the watch that reads it; the reflector never sees one.
const eventSkipped watch.EventType = "leanstore.cachetune.dev/Skipped"

// skippedObject carries the resourceVersion of a dropped event.
type skippedObject struct{ rv string }

func (s *skippedObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (s *skippedObject) DeepCopyObject() runtime.Object { c := *s; return &c }

func skippedEvent(rv string) watch.Event {
	return watch.Event{Type: eventSkipped, Object: &skippedObject{rv: rv}}
}

// isObjectEvent reports whether an event carries an object of the resource.
func isObjectEvent(t watch.EventType) bool {
	return t == watch.Added || t == watch.Modified || t == watch.Deleted
}

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

// skipped records a dropped event at resourceVersion rv, and reports whether
// the bookmark that covers it is due now; otherwise it arms due.
func (s *shardSkips) skipped(rv string) (dueNow bool) {
	s.pending = rv
	since := time.Since(s.lastMark)
	if since >= skippedBookmarkEvery {
		return true
	}
	if s.due == nil {
		if s.timer == nil {
			s.timer = time.NewTimer(skippedBookmarkEvery - since)
		} else {
			s.timer.Reset(skippedBookmarkEvery - since)
		}
		s.due = s.timer.C
	}
	return false
}

// flush disarms due and returns the bookmark, like example, at the last
// dropped event's resourceVersion, if no event sent since has covered it.
func (s *shardSkips) flush(example runtime.Object) (runtime.Object, bool) {
	if s.timer != nil {
		s.timer.Stop()
	}
	s.due = nil
	if s.pending == "" {
		return nil, false
	}
	bm, ok := bookmarkObject(example, s.pending, nil)
	if !ok {
		s.pending = ""
		return nil, false
	}
	s.lastMark = time.Now()
	return bm, true
}

func (s *shardSkips) stop() {
	if s.timer != nil {
		s.timer.Stop()
	}
}
