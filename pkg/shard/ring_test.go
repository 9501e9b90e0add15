package shard

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// ringKeys returns n object keys spread over 50 namespaces, named as
// Deployments name their Pods.
func ringKeys(n int) [][2]string {
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([][2]string, n)
	for i := range keys {
		keys[i] = [2]string{fmt.Sprintf("team-%d", i%50), fmt.Sprintf("web-%08x-%05x", r.Uint32(), i)}
	}
	return keys
}

func owners(r *Ring, keys [][2]string, by By) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = r.Owner(k[0], k[1], by)
	}
	return out
}

func TestRingBalance(t *testing.T) {
	keys := ringKeys(10000)
	for _, members := range [][]string{
		{"a", "b", "c"},
		{"controller-7d9f-x1", "controller-7d9f-x2", "controller-7d9f-x3"},
		{"shard-0", "shard-1", "shard-2"},
	} {
		r, err := NewRing(members...)
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for _, o := range owners(r, keys, ByObject) {
			count[o]++
		}
		fair := float64(len(keys)) / float64(len(members))
		for _, m := range members {
			if got := float64(count[m]); got < 0.9*fair || got > 1.1*fair {
				t.Errorf("ring %v: %s owns %d of %d keys, want within 10%% of %.0f", members, m, count[m], len(keys), fair)
			}
		}
		t.Logf("ring %v: %v of %d keys", members, count, len(keys))
		if len(count) != len(members) {
			t.Errorf("ring %v: keys owned by %v, want only the members", members, count)
		}
	}
}

// Namespace sharding balances namespaces, not objects: 10,000 namespaces
// spread as evenly as 10,000 objects.
func TestRingBalanceByNamespace(t *testing.T) {
	r, err := NewRing("a", "b", "c")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for i := range 10000 {
		ns := fmt.Sprintf("tenant-%d", i)
		o := r.Owner(ns, "pod-1", ByNamespace)
		if o2 := r.Owner(ns, "pod-2", ByNamespace); o2 != o {
			t.Fatalf("namespace %s: pod-1 on %s, pod-2 on %s: namespace sharding must keep a namespace together", ns, o, o2)
		}
		if o3 := r.Owner("", ns, ByNamespace); o3 != o {
			t.Fatalf("the Namespace object %s is on %s, its objects on %s", ns, o3, o)
		}
		count[o]++
	}
	for _, m := range []string{"a", "b", "c"} {
		if c := float64(count[m]); c < 0.9*10000/3 || c > 1.1*10000/3 {
			t.Errorf("%s owns %d of 10000 namespaces, want within 10%% of a third", m, count[m])
		}
	}
}

// A member that joins takes only keys (about 1/(n+1) of them) and one that
// leaves gives away only its own: no key moves between members that stay.
func TestRingMovesOnlyWhatMust(t *testing.T) {
	keys := ringKeys(10000)
	three, _ := NewRing("a", "b", "c")
	four, _ := NewRing("a", "b", "c", "d")
	two, _ := NewRing("a", "c")
	before := owners(three, keys, ByObject)

	moved := 0
	for i, o := range owners(four, keys, ByObject) {
		if o == before[i] {
			continue
		}
		moved++
		if o != "d" {
			t.Fatalf("key %v moved from %s to %s when d joined: only d may take keys", keys[i], before[i], o)
		}
	}
	if frac := float64(moved) / float64(len(keys)); frac < 0.9/4 || frac > 1.1/4 {
		t.Errorf("d joining moved %.3f of the keys, want about 1/4 (within 10%%)", frac)
	}

	moved = 0
	for i, o := range owners(two, keys, ByObject) {
		if o == before[i] {
			continue
		}
		moved++
		if before[i] != "b" {
			t.Fatalf("key %v moved from %s to %s when b left: only b's keys may move", keys[i], before[i], o)
		}
	}
	if held := countOf(before, "b"); moved != held {
		t.Errorf("b left: %d keys moved, want b's %d", moved, held)
	}
}

func countOf(xs []string, x string) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

// The ring's hash is part of its contract: replicas of different versions of
// this package must agree on every owner. These owners were computed when the
// ring was written; a change here splits a rolling upgrade's replicas.
func TestRingIsStableAcrossVersions(t *testing.T) {
	r, _ := NewRing("shard-0", "shard-1", "shard-2")
	for _, tc := range []struct {
		ns, name  string
		by        By
		wantHash  uint64
		wantOwner string
	}{
		{"default", "web-0", ByObject, 0xe561b668671b4307, "shard-0"},
		{"kube-system", "coredns", ByObject, 0x140c472f86540780, "shard-2"},
		{"", "node-1", ByObject, 0x13950d4ef307e655, "shard-0"},
		{"team-a", "x", ByNamespace, 0x45e5c4efef529ae3, "shard-2"},
	} {
		if got := KeyHash(tc.ns, tc.name, tc.by); got != tc.wantHash {
			t.Errorf("hash of %q/%q by %s = %x, want %x", tc.ns, tc.name, tc.by, got, tc.wantHash)
		}
		if got := r.Owner(tc.ns, tc.name, tc.by); got != tc.wantOwner {
			t.Errorf("Owner(%q, %q, %s) = %s, want %s", tc.ns, tc.name, tc.by, got, tc.wantOwner)
		}
	}
}

func TestNewRing(t *testing.T) {
	if _, err := NewRing("a", ""); err == nil {
		t.Error(`NewRing("a", "") accepted a member without a name`)
	}
	r, err := NewRing("b", "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Members(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("members %v, want [a b]: sorted, duplicates once", got)
	}
	empty, err := NewRing()
	if err != nil {
		t.Fatal(err)
	}
	if o := empty.Owner("ns", "x", ByObject); o != "" {
		t.Errorf("a ring without members gave x to %q", o)
	}
}
