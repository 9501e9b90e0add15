package shard

import (
	"testing"
)

// Every object belongs to exactly one of n static shards.
func TestStaticShardsPartition(t *testing.T) {
	const n = 4
	versions := make([]*Version, n)
	for i := range versions {
		m, err := Static(i, n)
		if err != nil {
			t.Fatal(err)
		}
		if versions[i], err = m.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range ringKeys(5000) {
		held := 0
		for _, v := range versions {
			if v.OwnsHash(KeyHashBytes([]byte(k[0]), []byte(k[1]), ByObject)) {
				held++
			}
		}
		if held != 1 {
			t.Fatalf("key %v held by %d of %d static shards, want exactly 1", k, held, n)
		}
	}
	for _, bad := range [][2]int{{0, 0}, {-1, 3}, {3, 3}} {
		if _, err := Static(bad[0], bad[1]); err == nil {
			t.Errorf("Static(%d, %d) accepted", bad[0], bad[1])
		}
	}
}

// Publishing the same members in another order or with repeats keeps the
// ring; publishing others replaces it.
func TestMembershipPublishKeepsAnEqualRing(t *testing.T) {
	m, err := NewMembership("a")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Set("b", "a"); err != nil {
		t.Fatal(err)
	}
	first := m.Current()
	if err := m.Set("a", "b", "b", "a"); err != nil {
		t.Fatal(err)
	}
	if cur := m.Current(); cur != first {
		t.Errorf("[a b b a] after [b a] published generation %d", cur.Generation())
	}
	if err := m.Set("a", "b", "c"); err != nil {
		t.Fatal(err)
	}
	if cur := m.Current(); cur == first || cur.Generation() != first.Generation()+1 || cur.Ring().Len() != 3 {
		t.Errorf("[a b c] after [a b]: generation %d with %d members, want %d with 3", cur.Generation(), cur.Ring().Len(), first.Generation()+1)
	}
	select {
	case <-first.Changed():
	default:
		t.Error("a new ring did not close the previous version's Changed channel")
	}
}

// A manual membership is not ready until its first Set; its own member may
// be outside the ring, and then owns nothing. Only a manual membership's
// members are set by hand.
func TestManualMembership(t *testing.T) {
	if _, err := NewMembership(""); err == nil {
		t.Error("NewMembership(\"\") accepted a member without a name")
	}
	m, err := NewMembership("c")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Ring(); ok {
		t.Fatal("a manual membership is ready before its first Set")
	}
	if st := m.Status(); st.Ready || st.Kind != "manual" || st.Generation != 0 {
		t.Fatalf("before Set: %+v", st)
	}
	if err := m.Set("a", ""); err == nil {
		t.Error("Set accepted a member without a name")
	}
	if err := m.Set("a", "b"); err != nil {
		t.Fatal(err)
	}
	v, err := m.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if v.Member() || v.Generation() != 1 {
		t.Fatalf("c outside [a b]: member %v, generation %d", v.Member(), v.Generation())
	}
	for _, k := range ringKeys(1000) {
		if v.Owns(k[0], k[1], ByObject) {
			t.Fatalf("a member outside the ring owns %v", k)
		}
	}
	if st := m.Status(); !st.Ready || st.Member || len(st.Members) != 2 {
		t.Errorf("after Set(a, b): %+v", st)
	}
	static, _ := Static(0, 2)
	if err := static.Set("a"); err == nil {
		t.Error("a static membership's members were set by hand")
	}
}

// A change of the ring that moves nothing to or from a member keeps its
// share; one that does moves it.
func TestVersionSameShare(t *testing.T) {
	m, _ := NewMembership("a")
	_ = m.Set("a", "b")
	ab := m.Current()
	_ = m.Set("a", "b", "c")
	abc := m.Current()
	if ab.SameShare(abc) || abc.SameShare(ab) {
		t.Error("c joining moved nothing to or from a")
	}
	if !abc.SameShare(abc) {
		t.Error("a version differs from itself")
	}
	// b's share moves when a leaves; a's (outside the ring) stays empty.
	_ = m.Set("b", "c")
	bc := m.Current()
	if bc.Member() {
		t.Fatal("a is a member of [b c]")
	}
	_ = m.Set("b")
	if !bc.SameShare(m.Current()) {
		t.Error("a outside [b c] and [b] owns something in one of them")
	}
	var none *Version
	if none.SameShare(ab) || ab.SameShare(none) {
		t.Error("a version without a ring has the share of one with")
	}
}
