package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// fakeWriter plays the parent's writer for a fake informer: it delivers
// stamped events to the informer's handler itself, with a latency of its
// choosing, and can lose some.
type fakeWriter struct {
	f        *fakeInformer
	seq      int64
	delay    time.Duration // added to every write's latency
	lose     int           // the last lose writes of each step never arrive
	failures int           // the first failures writes of each step fail
	late     time.Duration // one write of each step takes this long
}

func stamped(name string, seq int64, sent time.Time) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
		dataset.EventAnnotation: fmt.Sprintf("%d/%d", seq, sent.UnixNano()),
	}}}
}

func (w *fakeWriter) write(_ context.Context, step int) (EventsAnswer, error) {
	h := w.f.h
	if step == 0 {
		for i := range 10 {
			w.seq++
			h.OnAdd(stamped(fmt.Sprint("pod-", i), w.seq, time.Now()), false)
		}
		w.f.mu.Lock()
		w.f.store = append(w.f.store, make([][]byte, 10)...)
		w.f.mu.Unlock()
		return EventsAnswer{Objects: 10}, nil
	}
	st := dataset.EventStep{Rate: 100, Duration: 50 * time.Millisecond, First: w.seq + 1, Started: time.Now()}
	// Ten writes: eight updates of the setup's Pods, a delete of pod-9 (its
	// last stamp is the setup's, 10), and a create.
	for i := range 10 {
		w.seq++
		sent := time.Now().Add(-w.delay)
		if i == 3 {
			sent = sent.Add(-w.late)
		}
		if i < w.failures {
			st.Failed = append(st.Failed, w.seq)
			continue
		}
		lost := i >= 10-w.lose
		switch i {
		case 8:
			st.Deleted++
			st.Deletions = append(st.Deletions, dataset.Deletion{Seq: w.seq, Of: int64(10 * step), At: sent.UnixNano()})
			if !lost {
				h.OnDelete(cache.DeletedFinalStateUnknown{Key: "pod-9", Obj: stamped("pod-9", int64(10*step), sent)})
			}
		case 9:
			st.Created++
			if !lost {
				h.OnAdd(stamped(fmt.Sprint("new-", w.seq), w.seq, sent), false)
			}
		default:
			st.Status++
			if !lost {
				h.OnUpdate(nil, stamped(fmt.Sprint("pod-", i), w.seq, sent))
			}
		}
	}
	st.Last = w.seq
	time.Sleep(st.Duration) // as long as a writer would take
	st.Elapsed = 50 * time.Millisecond
	if len(st.Failed) > 0 {
		st.Error = "write failed"
	}
	return EventsAnswer{Step: st}, nil
}

func TestMeasureEvents(t *testing.T) {
	leakcheck.Check(t)
	for _, tc := range []struct {
		name                            string
		lose, failures                  int
		late                            time.Duration
		wantMatched, wantLost, wantLate int
		wantError                       string
	}{
		{name: "every write", late: 2 * time.Second, wantMatched: 10, wantLate: 1},
		{name: "lost", lose: 2, wantMatched: 8, wantLost: 2, wantError: "2 of 10 writes never reached the handler"},
		{name: "failed writes", failures: 1, wantMatched: 9, wantError: "1 writes failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeInformer{n: 50, size: 1024}
			w := &fakeWriter{f: f, delay: 3 * time.Millisecond, lose: tc.lose, failures: tc.failures, late: tc.late}
			plan := DefaultPlan()
			plan.Relists, plan.Churn = 0, nil
			plan.Settle, plan.Idle = Duration(10*time.Millisecond), Duration(10*time.Millisecond)
			plan.Events = DefaultEvents(100, 1000)
			plan.Events.Objects, plan.Events.Step = 10, Duration(50*time.Millisecond)
			plan.Events.Idle, plan.Events.Drain = Duration(50*time.Millisecond), Duration(200*time.Millisecond)
			// Step k's delete takes the Pod whose last stamp is 10k: the
			// setup's last for step 1, the first step's create for step 2.
			res, err := Measure(context.Background(), MeasureSpec{
				Mode:      Mode{Name: "fake/stream", Streaming: true, Start: f.start},
				Config:    &rest.Config{Host: "http://127.0.0.1:1"},
				Resources: podsRef,
				Plan:      plan,
				Write:     w.write,
			})
			if err != nil {
				t.Fatal(err)
			}
			ev := res.Events
			if ev == nil || ev.Error != "" || ev.Objects != 10 || len(ev.Steps) != 2 {
				t.Fatalf("events phase %+v", ev)
			}
			if ev.LiveHeapBefore == 0 || ev.LiveHeapAfter == 0 || ev.Idle.EndSeconds <= ev.Idle.StartSeconds {
				t.Errorf("phase heap %d then %d, idle window %+v", ev.LiveHeapBefore, ev.LiveHeapAfter, ev.Idle)
			}
			for _, st := range ev.Steps {
				if st.Matched != tc.wantMatched || st.Lost != tc.wantLost || st.Late != tc.wantLate {
					t.Errorf("step %d: matched %d, lost %d, late %d; want %d, %d, %d", st.Index, st.Matched, st.Lost, st.Late, tc.wantMatched, tc.wantLost, tc.wantLate)
				}
				if (tc.wantError == "") != (st.Error == "") || !strings.Contains(st.Error, tc.wantError) {
					t.Errorf("step %d: error %q, want %q", st.Index, st.Error, tc.wantError)
				}
				if st.Writes.Failed != tc.failures || st.Writes.Total()+st.Writes.Failed != 10 || st.AchievedRate != float64(10-tc.failures)/0.05 {
					t.Errorf("step %d: writes %+v at %.0f/s", st.Index, st.Writes, st.AchievedRate)
				}
				// Every write that arrived took the writer's 3 ms and more.
				if st.Latency.Count != st.Matched || st.Latency.P50 < 3 || st.Latency.P50 > 1000 {
					t.Errorf("step %d: latency %+v over %d writes, want about 3 ms", st.Index, st.Latency, st.Matched)
				}
				if tc.late > 0 && st.Latency.Max < 2000 {
					t.Errorf("step %d: the slowest write took %.0f ms, want over 2 s", st.Index, st.Latency.Max)
				}
				if n := st.Delivered.Adds + st.Delivered.Updates + st.Delivered.Deletes; n != 10-tc.lose-tc.failures || st.CPUPerEvent < 0 {
					t.Errorf("step %d: delivered %+v, CPU per event %.1f µs", st.Index, st.Delivered, st.CPUPerEvent)
				}
				if st.Window.EndSeconds <= st.Window.StartSeconds || st.Window.Sampling.Samples == 0 || st.Window.PeakRatio < 0.9 {
					t.Errorf("step %d: window %+v", st.Index, st.Window)
				}
			}
		})
	}
}

func TestEventRecorderDuplicatesAndRange(t *testing.T) {
	r, err := newEventRecorder(5)
	if err != nil {
		t.Fatal(err)
	}
	defer r.free()
	now := time.Now()
	r.saw(stamped("a", 2, now), false)
	r.saw(stamped("a", 2, now), false)            // again
	r.saw(stamped("a", 9, now), false)            // beyond the recorder
	r.saw(stamped("a", 2, now), true)             // deleted carrying 2: a deletion of its own
	r.saw(&metav1.PartialObjectMetadata{}, false) // no stamp
	r.saw("not an object", false)
	if r.arrived.Load() != 2 || r.dups.Load() != 1 || r.outside.Load() != 1 {
		t.Errorf("arrived %d, duplicates %d, outside %d; want 2, 1, 1", r.arrived.Load(), r.dups.Load(), r.outside.Load())
	}
	tl := r.tally(dataset.EventStep{First: 1, Last: 3, Status: 2, Deleted: 1, Deletions: []dataset.Deletion{{Seq: 3, Of: 2, At: now.UnixNano()}}}, time.Second)
	if tl.matched != 2 || tl.lost != 1 || len(tl.latency) != 2 {
		t.Errorf("tally %+v: want 2 matched (2 and the deletion 3), 1 lost (1)", tl)
	}
}

func TestCPUPerEvent(t *testing.T) {
	for _, tc := range []struct {
		cpu, wall time.Duration
		idle      float64
		events    int
		want      float64
	}{
		// 1.2 s of CPU in 10 s at 0.02 s/s at rest: 1 s for 1,000 events.
		{1200 * time.Millisecond, 10 * time.Second, 0.02, 1000, 1000},
		{100 * time.Millisecond, 10 * time.Second, 0.02, 1000, 0}, // less than at rest: nothing to attribute
		{time.Second, time.Second, 0, 0, 0},
	} {
		if got := cpuPerEvent(tc.cpu, tc.idle, tc.wall, tc.events); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("cpuPerEvent(%s, %v/s, %s, %d) = %v µs, want %v", tc.cpu, tc.idle, tc.wall, tc.events, got, tc.want)
		}
	}
}

func TestEventRecorderSkipsTheDeletionUpdate(t *testing.T) {
	r, err := newEventRecorder(5)
	if err != nil {
		t.Fatal(err)
	}
	defer r.free()
	obj := stamped("a", 3, time.Now())
	r.saw(obj, false)
	now := metav1.Now()
	obj.DeletionTimestamp = &now
	r.saw(obj, false) // the update that marks it deleted
	r.saw(obj, true)  // its DELETED event
	if r.arrived.Load() != 2 || r.dups.Load() != 0 || r.gone[3].Load() == 0 {
		t.Errorf("arrived %d, duplicates %d, deletion recorded %v; want 2, 0, true", r.arrived.Load(), r.dups.Load(), r.gone[3].Load() != 0)
	}
}
