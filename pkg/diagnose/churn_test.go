package diagnose

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
)

// object is a tiny version history of one Pod, for feeding the detector.
type object struct {
	cur *corev1.Pod
	rv  int
}

func newObject(name string) *object {
	return &object{cur: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "1", Generation: 1,
	}}}
}

// next returns (old, new) after mutate, with a fresh resourceVersion.
func (o *object) next(mutate func(*corev1.Pod)) (*corev1.Pod, *corev1.Pod) {
	old := o.cur
	n := old.DeepCopy()
	o.rv++
	n.ResourceVersion = strconv.Itoa(o.rv + 1)
	mutate(n)
	o.cur = n
	return old, n
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newTestDetector(opts ...ChurnOption) (*ChurnDetector, *testingclock.FakeClock) {
	clk := testingclock.NewFakeClock(t0)
	d, err := NewChurnDetector(append([]ChurnOption{WithClock(clk), WithResource("pods")}, opts...)...)
	if err != nil {
		panic(err) // the tests' options are valid
	}
	return d, clk
}

var ignoreTimes = cmpopts.IgnoreFields(Finding{}, "FirstSeen", "LastSeen", "StreakSince", "Classes")

// statusWrite sets a new status timestamp, written by manager "looper".
func statusWrite(now time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Message = now.Format(time.RFC3339Nano)
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "looper", Operation: metav1.ManagedFieldsOperationUpdate,
			Subresource: "status", Time: &metav1.Time{Time: now.Truncate(time.Second)},
			FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:message":{}}}`)}}
	}
}

func TestLoop(t *testing.T) {
	d, clk := newTestDetector(WithWindow(10*time.Second), WithLoopThreshold(5))
	o := newObject("looping")
	for i := 1; i <= 12; i++ {
		clk.Step(time.Second)
		d.Observe(o.next(statusWrite(clk.Now())))
		// Five updates reach the threshold, but span only 4 s: the sixth makes
		// them sustained over half the window.
		if got := len(d.Findings()); (i < 6 && got != 0) || (i >= 6 && got != 1) {
			t.Fatalf("after %d updates: %d findings", i, got)
		}
	}
	want := []Finding{{Kind: FindingLoop, Resource: "pods", Object: ObjectRef{"ns", "looping", "uid-looping"},
		Managers: []string{"looper"}, Updates: 7, Distinct: 7, Streak: 12, Window: 10 * time.Second}}
	got := d.Findings()
	if diff := cmp.Diff(want, got, ignoreTimes); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	// The threshold of 5 keeps a history of 7 updates: counts in the window
	// stop there; the streak goes on.
	if got[0].Classes[ClassStatus] != 7 || !got[0].StreakSince.Equal(t0.Add(time.Second)) ||
		!got[0].FirstSeen.Equal(t0.Add(6*time.Second)) || !got[0].LastSeen.Equal(t0.Add(12*time.Second)) {
		t.Errorf("classes %v, streak since %v, first seen %v, last seen %v", got[0].Classes, got[0].StreakSince, got[0].FirstSeen, got[0].LastSeen)
	}
}

func TestNotALoop(t *testing.T) {
	tests := []struct {
		name  string
		every time.Duration
		n     int
		write func(i int, now time.Time) func(*corev1.Pod)
	}{
		{"quiet: two updates", time.Second, 2, func(_ int, now time.Time) func(*corev1.Pod) { return statusWrite(now) }},
		{"burst shorter than half the window", 200 * time.Millisecond, 40, func(_ int, now time.Time) func(*corev1.Pod) { return statusWrite(now) }},
		{"spread over more than the window", 6 * time.Second, 30, func(_ int, now time.Time) func(*corev1.Pod) { return statusWrite(now) }},
		{"spec changes", time.Second, 30, func(i int, _ time.Time) func(*corev1.Pod) {
			return func(p *corev1.Pod) { p.Generation++; p.Spec.NodeName = fmt.Sprint(i) }
		}},
		{"flip between two values", time.Second, 30, func(i int, _ time.Time) func(*corev1.Pod) {
			return func(p *corev1.Pod) { p.Labels = map[string]string{"v": strconv.Itoa(i % 2)} }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, clk := newTestDetector(WithWindow(20*time.Second), WithLoopThreshold(5))
			o := newObject("x")
			for i := 0; i < tt.n; i++ {
				clk.Step(tt.every)
				d.Observe(o.next(tt.write(i, clk.Now())))
			}
			if f := d.Findings(); len(f) != 0 {
				t.Errorf("findings: %+v", f)
			}
		})
	}
}

// annotate is manager m setting annotation x, taking it over from whoever owned
// it (an Update through the API server moves ownership of a changed field).
func annotate(m, other, value string, now time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Annotations = map[string]string{"x": value}
		var kept []metav1.ManagedFieldsEntry
		for _, e := range p.ManagedFields {
			if e.Manager != other && e.Manager != m {
				kept = append(kept, e)
			}
		}
		p.ManagedFields = append(kept, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationUpdate,
			Time: &metav1.Time{Time: now.Truncate(time.Second)}, FieldsV1: metav1.NewFieldsV1(ownsX)})
	}
}

func TestPingPong(t *testing.T) {
	d, clk := newTestDetector(WithWindow(time.Minute), WithPingPongTurns(4), WithLoopThreshold(10))
	o := newObject("fought")
	writers := []string{"alice", "bob"}
	for i := 0; i < 12; i++ {
		clk.Step(100 * time.Millisecond) // many writes within one second: times do not advance
		w, other := writers[i%2], writers[(i+1)%2]
		d.Observe(o.next(annotate(w, other, w, clk.Now())))
		// The first write takes nothing; the next four are the four turns.
		if got := len(d.Findings()); (i < 4 && got != 0) || (i >= 4 && got != 1) {
			t.Fatalf("after %d writes: %d findings: %+v", i+1, got, d.Findings())
		}
	}
	want := []Finding{{Kind: FindingPingPong, Resource: "pods", Object: ObjectRef{"ns", "fought", "uid-fought"},
		Managers: []string{"alice", "bob"}, Updates: 11, Window: time.Minute}}
	if diff := cmp.Diff(want, d.Findings(), ignoreTimes); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// Two managers writing their own fields in turn (spec, then status) are a
// normal controller, not ping-pong.
func TestTakingTurnsOnOwnFields(t *testing.T) {
	d, clk := newTestDetector(WithPingPongTurns(4))
	o := newObject("healthy")
	for i := 0; i < 10; i++ {
		clk.Step(time.Second)
		now := clk.Now()
		d.Observe(o.next(func(p *corev1.Pod) {
			p.Generation++
			p.Spec.NodeName = strconv.Itoa(i)
			p.ManagedFields = []metav1.ManagedFieldsEntry{entry("user", now.Unix()-1700000000, ownsSpec)}
		}))
		clk.Step(time.Second)
		d.Observe(o.next(statusWrite(clk.Now())))
	}
	if f := d.Findings(); len(f) != 0 {
		t.Errorf("findings: %+v", f)
	}
}

func TestBoundsAndForgetting(t *testing.T) {
	d, clk := newTestDetector(WithMaxObjects(100), WithWindow(10*time.Second))
	for i := 0; i < 1000; i++ {
		o := newObject(fmt.Sprint("obj-", i))
		d.Observe(o.next(statusWrite(clk.Now())))
	}
	if got := d.Tracked(); got != 100 {
		t.Errorf("tracked %d objects, want the cap of 100", got)
	}
	if d.evicted != 900 {
		t.Errorf("evicted %d, want 900", d.evicted)
	}
	// Quiet for longer than forgetAfter (the window): the next update of any
	// object sweeps them all.
	clk.Step(11 * time.Second)
	o := newObject("late")
	d.Observe(o.next(statusWrite(clk.Now())))
	if got := d.Tracked(); got != 1 {
		t.Errorf("tracked %d objects after the quiet ones were forgotten, want 1", got)
	}
	d.Forget(o.cur)
	if got := d.Tracked(); got != 0 {
		t.Errorf("tracked %d objects after Forget, want 0", got)
	}
}

func TestFindingRetention(t *testing.T) {
	d, clk := newTestDetector(WithWindow(4*time.Second), WithLoopThreshold(3), WithRetention(time.Minute), WithMaxFindings(2))
	for _, name := range []string{"a", "b", "c"} {
		o := newObject(name)
		for i := 0; i < 3; i++ {
			clk.Step(time.Second)
			d.Observe(o.next(statusWrite(clk.Now())))
		}
	}
	var names []string
	for _, f := range d.Findings() {
		names = append(names, f.Object.Name)
	}
	if diff := cmp.Diff([]string{"b", "c"}, names); diff != "" {
		t.Errorf("findings kept under a cap of 2 (-want +got):\n%s", diff)
	}
	clk.Step(61 * time.Second)
	if f := d.Findings(); len(f) != 0 {
		t.Errorf("findings after retention: %+v", f)
	}
}

// TestMemoryBound fills the detector to its default cap, every object with a
// full history, and checks the documented bound (under 6 MB).
func TestMemoryBound(t *testing.T) {
	d, clk := newTestDetector()
	if d.o.history != 30 || d.o.maxObjects != 5000 {
		t.Fatalf("defaults changed: history %d, max objects %d", d.o.history, d.o.maxObjects)
	}
	pom := func(i, rv int) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: "namespace-of-the-app", Name: fmt.Sprintf("pod-%05d-with-a-realistic-name", i),
			UID: types.UID(fmt.Sprintf("8f2e6c1a-0000-4000-8000-%012d", i)), ResourceVersion: strconv.Itoa(rv)}}
	}
	// As many objects as the cap, each updated until its history is full.
	for round := 0; round <= 30; round++ {
		for i := 0; i < 5000; i++ {
			clk.Step(time.Microsecond)
			d.Observe(pom(i, round), pom(i, round+1))
		}
	}
	if d.Tracked() != 5000 {
		t.Fatalf("tracked %d objects, want the cap of 5000", d.Tracked())
	}
	var with, without runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&with)
	runtime.KeepAlive(d)
	d = nil
	runtime.GC()
	runtime.ReadMemStats(&without)
	used := int64(with.HeapAlloc) - int64(without.HeapAlloc)
	t.Logf("5000 objects with full histories: %.2f MB (%.0f bytes per object)", float64(used)/1e6, float64(used)/5000)
	if used > 6e6 {
		t.Errorf("detector state %.2f MB, documented bound 6 MB", float64(used)/1e6)
	}
}
