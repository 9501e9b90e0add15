package dataset

import (
	"testing"
	"time"
)

// TestEventPlan checks the writes a step plans: the mix of kinds, creates
// added at the end, deletes from the oldest, patches in turn over the Pods
// left, sequence numbers one after the other.
func TestEventPlan(t *testing.T) {
	w := &EventWriter{spec: Spec{Namespace: "ns", Name: "d"}.WithDefaults(), workers: 4, next: 100, names: map[int]string{}}
	for i := range 5 {
		w.members = append(w.members, i)
		w.names[i] = w.name(i)
	}
	kinds := map[eventKind]int{}
	deleted := map[int]bool{}
	patched := map[int]int{}
	for n := range 100 {
		job := w.plan()
		if job.seq != int64(n+1) {
			t.Fatalf("write %d has sequence number %d", n, job.seq)
		}
		if job.name == "" || deleted[job.idx] {
			t.Fatalf("write %d (%v) to pod %d named %q, deleted %v", n, job.kind, job.idx, job.name, deleted[job.idx])
		}
		kinds[job.kind]++
		switch job.kind {
		case eventDelete:
			deleted[job.idx] = true
		case eventStatus, eventLabels:
			patched[job.idx]++
		}
	}
	if kinds[eventStatus] != 60 || kinds[eventLabels] != 20 || kinds[eventCreate] != 10 || kinds[eventDelete] != 10 {
		t.Errorf("kinds %v, want 60 status, 20 label, 10 create, 10 delete", kinds)
	}
	// Ten deletes took the five first Pods and the five first created.
	for _, idx := range []int{0, 1, 2, 3, 4, 100, 101, 102, 103, 104} {
		if !deleted[idx] {
			t.Errorf("pod %d not deleted: deletes must take the oldest", idx)
		}
	}
	if len(w.members) != 5 || w.members[0] != 105 || len(w.names) != 5 {
		t.Errorf("members %v (names %d) after 10 creates and 10 deletes, want the 5 newest", w.members, len(w.names))
	}
	if len(patched) < 10 {
		t.Errorf("patches went to %d pods only: %v", len(patched), patched)
	}
}

func TestEventStamp(t *testing.T) {
	at := time.Unix(1700000000, 123456789)
	seq, sent, ok := ParseEventStamp(stamp(42, at))
	if !ok || seq != 42 || sent != at.UnixNano() {
		t.Errorf("ParseEventStamp(stamp(42, %v)) = %d, %d, %v", at, seq, sent, ok)
	}
	for _, bad := range []string{"", "42", "x/1", "42/y", "0/5", "-3/5"} {
		if _, _, ok := ParseEventStamp(bad); ok {
			t.Errorf("ParseEventStamp(%q) accepted it", bad)
		}
	}
}
