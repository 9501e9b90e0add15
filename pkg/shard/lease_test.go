package shard

import (
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// idleLeaseMembership is a Lease membership of identity self that has
// renewed its Lease at now and listed the others', without running: its
// client is never called.
func idleLeaseMembership(t *testing.T, self string, now time.Time) (*leaseMembership, *Membership) {
	t.Helper()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewLeaseMembership(client, LeaseConfig{Namespace: "ns", Group: "ctl", Identity: self})
	if err != nil {
		t.Fatal(err)
	}
	l := m.source.(*leaseMembership)
	l.synced, l.lastRenew = true, now
	return l, m
}

// A holder named by two Leases (a replica renamed its Lease, or two processes
// of one identity in two groups' namespaces) is one member: rebuilding an
// unchanged membership publishes no new ring, so the informers do not wake to
// rebalance at every renewal.
func TestLeaseDuplicateHoldersDoNotRepublish(t *testing.T) {
	now := time.Now()
	l, m := idleLeaseMembership(t, "a", now)
	l.seen["ctl-b"] = observedLease{holder: "b", rv: "1", duration: time.Minute, observed: now}
	l.seen["ctl-b-old"] = observedLease{holder: "b", rv: "2", duration: time.Minute, observed: now}
	l.seen["ctl-c"] = observedLease{holder: "c", rv: "3", duration: time.Minute, observed: now}
	l.rebuild(now)
	first := m.Current()
	if got := first.Members(); len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("members %v, want [a b c]", got)
	}
	for i := range 3 {
		l.rebuild(now.Add(time.Duration(i) * time.Second))
	}
	if cur := m.Current(); cur != first {
		t.Fatalf("rebuilding unchanged Leases published generation %d (members %v) after %d", cur.Generation(), cur.Members(), first.Generation())
	}
	select {
	case <-first.changed:
		t.Fatal("an unchanged membership closed the ring's changed channel")
	default:
	}
}
