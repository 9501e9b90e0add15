package bench

import (
	"errors"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// eventRecorder is the handler's side of the events phase: for every event
// that carries a writer's stamp (dataset.EventAnnotation) it records when the
// event arrived and how long after the write was sent, by the write's
// sequence number, in arrays allocated once, outside the Go heap (offHeap),
// so that recording neither allocates nor grows the heap being measured.
//
// The times are Unix nanoseconds from each process's time.Now: the wall
// clock (CLOCK_REALTIME), one clock for every process of the machine, so a
// time stamped by the writer in the parent and one read in the child's
// handler can be subtracted. (Go's monotonic readings cannot: they count from
// each process's own start.) Only a step of the clock while a write is on its
// way would show, as a negative or an outlying latency; NTP's slewing moves
// it by at most 0.5 ms a second.
type eventRecorder struct {
	// recv and lat are, per sequence number, when its event arrived (0: not
	// yet) and its latency in ns.
	recv, lat []atomic.Int64
	// gone is, per sequence number a deleted object carried, when its
	// DELETED event arrived.
	gone []atomic.Int64
	// arrived counts first arrivals (events and deletions), dups events
	// that arrived again, outside stamps beyond the arrays.
	arrived, dups, outside atomic.Int64
}

// newEventRecorder returns a recorder for sequence numbers 1 to maxSeq.
func newEventRecorder(maxSeq int64) (*eventRecorder, error) {
	n := int(maxSeq) + 1
	recv, err1 := offHeap[atomic.Int64](n)
	lat, err2 := offHeap[atomic.Int64](n)
	gone, err3 := offHeap[atomic.Int64](n)
	r := &eventRecorder{recv: recv, lat: lat, gone: gone}
	if err := errors.Join(err1, err2, err3); err != nil {
		r.free()
		return nil, err
	}
	return r, nil
}

// free unmaps the arrays; the recorder must no longer be reachable from the
// handler.
func (r *eventRecorder) free() {
	for _, a := range [][]atomic.Int64{r.recv, r.lat, r.gone} {
		if a != nil {
			_ = freeOffHeap(a) // fails only for a slice offHeap did not return
		}
	}
	r.recv, r.lat, r.gone = nil, nil, nil
}

// saw records an event of obj (deleted for OnDelete) if it carries a stamp.
func (r *eventRecorder) saw(obj any, deleted bool) {
	now := time.Now().UnixNano()
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = d.Obj, true
	}
	m, ok := obj.(metav1.Object)
	if !ok || !deleted && m.GetDeletionTimestamp() != nil {
		// The update that marks a Pod deleted comes before its DELETED
		// event and carries the stamp of the Pod's last write: the delete
		// is timed at its DELETED event.
		return
	}
	seq, sent, ok := dataset.ParseEventStamp(m.GetAnnotations()[dataset.EventAnnotation])
	if !ok {
		return
	}
	if seq >= int64(len(r.recv)) {
		r.outside.Add(1)
		return
	}
	first := false
	if deleted {
		first = r.gone[seq].CompareAndSwap(0, now)
	} else if first = r.recv[seq].CompareAndSwap(0, now); first {
		r.lat[seq].Store(now - sent)
	}
	if first {
		r.arrived.Add(1)
	} else {
		r.dups.Add(1)
	}
}

// eventTally is what the recorder saw of one step's writes.
type eventTally struct {
	latency []time.Duration // of the writes whose event arrived
	// matched writes arrived, lost did not, late took longer than the bound,
	// negative arrived before they were sent (the clock stepped back).
	matched, lost, late, negative int
}

// tally goes through every write of step: a write that failed is not
// counted; a delete arrived when a DELETED event carried the stamp its Pod
// had; any other write when an event carried its own stamp. A write whose
// event has not arrived is lost; one that took longer than lateAfter is late.
func (r *eventRecorder) tally(step dataset.EventStep, lateAfter time.Duration) eventTally {
	t := eventTally{latency: make([]time.Duration, 0, step.Writes())}
	failed := make(map[int64]bool, len(step.Failed))
	for _, s := range step.Failed {
		failed[s] = true
	}
	deletions := make(map[int64]dataset.Deletion, len(step.Deletions))
	for _, d := range step.Deletions {
		deletions[d.Seq] = d
	}
	for s := step.First; s <= step.Last; s++ {
		if failed[s] {
			continue
		}
		var l int64
		if d, ok := deletions[s]; ok {
			if d.Of <= 0 || d.Of >= int64(len(r.gone)) || r.gone[d.Of].Load() == 0 {
				t.lost++
				continue
			}
			l = r.gone[d.Of].Load() - d.At
		} else {
			if s <= 0 || s >= int64(len(r.recv)) || r.recv[s].Load() == 0 {
				t.lost++
				continue
			}
			l = r.lat[s].Load()
		}
		t.matched++
		if l < 0 {
			t.negative++
			l = 0
		}
		if time.Duration(l) > lateAfter {
			t.late++
		}
		t.latency = append(t.latency, time.Duration(l))
	}
	return t
}
