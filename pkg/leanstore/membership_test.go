package leanstore

import (
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// idleLeaseMembership is a Lease membership of identity self that has
// renewed its Lease at now and listed the others', without running: its
// client is never called.
func idleLeaseMembership(t *testing.T, self string, now time.Time) *leaseMembership {
	t.Helper()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewLeaseMembership(client, LeaseConfig{Namespace: "ns", Group: "ctl", Identity: self})
	if err != nil {
		t.Fatal(err)
	}
	l := m.leases
	l.synced, l.lastRenew = true, now
	return l
}

// A holder named by two Leases (a replica renamed its Lease, or two processes
// of one identity in two groups' namespaces) is one member: rebuilding an
// unchanged membership publishes no new ring, so the informers do not wake to
// rebalance at every renewal.
func TestMembershipDuplicateHoldersDoNotRepublish(t *testing.T) {
	now := time.Now()
	l := idleLeaseMembership(t, "a", now)
	l.seen["ctl-b"] = observedLease{holder: "b", rv: "1", duration: time.Minute, observed: now}
	l.seen["ctl-b-old"] = observedLease{holder: "b", rv: "2", duration: time.Minute, observed: now}
	l.seen["ctl-c"] = observedLease{holder: "c", rv: "3", duration: time.Minute, observed: now}
	l.rebuild(now)
	first := l.m.cur.Load()
	if got := first.members(); len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("members %v, want [a b c]", got)
	}
	for i := range 3 {
		l.rebuild(now.Add(time.Duration(i) * time.Second))
	}
	if cur := l.m.cur.Load(); cur != first {
		t.Fatalf("rebuilding unchanged Leases published generation %d (members %v) after %d", cur.gen, cur.members(), first.gen)
	}
	select {
	case <-first.changed:
		t.Fatal("an unchanged membership closed the ring's changed channel")
	default:
	}
}

// Publishing the same members in another order or with repeats keeps the
// ring; publishing others replaces it.
func TestMembershipPublishKeepsAnEqualRing(t *testing.T) {
	m := &Membership{self: "a", kind: "leases"}
	m.cur.Store(&ringState{self: -1, changed: make(chan struct{})})
	m.publish([]string{"b", "a"})
	first := m.cur.Load()
	m.publish([]string{"a", "b", "b", "a"})
	if cur := m.cur.Load(); cur != first {
		t.Errorf("[a b b a] after [b a] published generation %d", cur.gen)
	}
	m.publish([]string{"a", "b", "c"})
	if cur := m.cur.Load(); cur == first || cur.gen != first.gen+1 || cur.ring.Len() != 3 {
		t.Errorf("[a b c] after [a b]: generation %d with %d members, want %d with 3", cur.gen, cur.ring.Len(), first.gen+1)
	}
}
