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
