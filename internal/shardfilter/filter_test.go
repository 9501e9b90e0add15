package shardfilter

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/internal/reflector"
	"github.com/cachetune/cachetune/pkg/shard"
)

// manualMembership is the membership of self whose members are set by hand,
// ready with these.
func manualMembership(t *testing.T, self string, members ...string) *shard.Membership {
	t.Helper()
	m, err := shard.NewMembership(self)
	if err != nil {
		t.Fatal(err)
	}
	setMembers(t, m, members...)
	return m
}

func setMembers(t *testing.T, m *shard.Membership, members ...string) {
	t.Helper()
	if err := m.Set(members...); err != nil {
		t.Fatal(err)
	}
}

// staticFilter is shard index of total's filter, with its ring applied.
func staticFilter(t *testing.T, index, total int) *Filter {
	t.Helper()
	m, err := shard.Static(index, total)
	if err != nil {
		t.Fatal(err)
	}
	f := New(&Config{Membership: m, By: shard.ByObject})
	if err := f.Apply(t.Context()); err != nil {
		t.Fatal(err)
	}
	return f
}

// ownedAndNot returns the name of a Pod of namespace ns that f keeps and one it
// drops.
func ownedAndNot(t *testing.T, f *Filter) (owned, other string) {
	t.Helper()
	for i := 0; owned == "" || other == ""; i++ {
		name := fmt.Sprintf("p-%d", i)
		if f.OwnsBytes([]byte("ns"), []byte(name)) {
			owned = name
		} else {
			other = name
		}
	}
	return owned, other
}

// A replica outside the ring (its Lease not renewed in time) holds nothing.
func TestShardOutsideTheRingOwnsNothing(t *testing.T) {
	m := manualMembership(t, "c", "a", "b")
	f := New(&Config{Membership: m, By: shard.ByObject})
	if err := f.Apply(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		ns, name := fmt.Sprintf("team-%d", i%50), fmt.Sprintf("web-%d", i)
		if f.OwnsBytes([]byte(ns), []byte(name)) || f.Owns(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}) {
			t.Fatalf("a replica outside the ring owns %s/%s", ns, name)
		}
	}
}

func TestShardConfigErrors(t *testing.T) {
	m, _ := shard.Static(0, 2)
	for _, c := range []Config{{Membership: nil, By: shard.ByObject}, {Membership: m, By: "uid"}} {
		f := New(&c)
		if err := f.Apply(t.Context()); err == nil {
			t.Errorf("WithShard(%v, %q) applied without an error", c.Membership, c.By)
		}
		if st := f.Status(); st.Error == "" {
			t.Errorf("WithShard(%v, %q): Status has no error", c.Membership, c.By)
		}
	}
}

// A ring change makes the informer rebalancing until a list with the new ring
// has been handed to the reflector; a change that moves nothing to or from
// this replica needs no list.
func TestShardRebalancingUntilTaken(t *testing.T) {
	m := manualMembership(t, "a", "a", "b")
	f := New(&Config{Membership: m, By: shard.ByObject})
	if err := f.Apply(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.Took()
	if st := f.Status(); st.Rebalancing || st.Generation != 1 || len(st.Members) != 2 {
		t.Fatalf("after the first list: %+v", st)
	}
	changed := f.Changed()
	setMembers(t, m, "a", "b", "c")
	select {
	case <-changed:
	default:
		t.Fatal("a new ring did not close the applied ring's changed channel")
	}
	if !f.moved(m.Current()) {
		t.Fatal("c joining moved nothing to or from a")
	}
	if st := f.Status(); !st.Rebalancing || st.RebalancingSince.IsZero() {
		t.Fatalf("after the ring changed: %+v, want rebalancing", st)
	}
	if err := f.Apply(t.Context()); err != nil { // the re-list inside the watch
		t.Fatal(err)
	}
	f.Took()
	if st := f.Status(); st.Rebalancing || st.Rebalances != 1 || len(st.Members) != 3 {
		t.Fatalf("after the re-list: %+v, want 1 rebalance and 3 members", st)
	}
	setMembers(t, m, "a", "b", "c") // the same members: no new ring
	if f.moved(m.Current()) {
		t.Error("a ring with the same members moved something")
	}
}

// A ring that moves nothing is taken without a list, but only the ring that
// was compared: one published in between, which moves slots, is left for the
// watch's next rebalance, not taken with objects the informer does not hold.
func TestShardAdvanceTakesOnlyTheComparedRing(t *testing.T) {
	m := manualMembership(t, "z", "a", "b") // z outside the ring: owns nothing
	f := New(&Config{Membership: m, By: shard.ByObject})
	if err := f.Apply(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.Took()
	setMembers(t, m, "a", "b", "c") // z still outside: nothing moves
	compared := m.Current()
	if f.moved(compared) {
		t.Fatal("c joining moved something to z, which is outside the ring")
	}
	setMembers(t, m, "a", "b", "c", "z") // published before the advance: z takes slots
	f.advance(compared)
	if st := f.Status(); !st.Rebalancing || len(st.Members) != 3 {
		t.Fatalf("after advancing to [a b c] with [a b c z] published: %+v, want 3 members and rebalancing", st)
	}
	select {
	case <-f.Changed():
	default:
		t.Fatal("the advanced ring's changed channel is open: the watch would never take z's slots")
	}
	if !f.moved(m.Current()) {
		t.Error("z joining moved nothing to z")
	}
}

// A re-list's DELETED of an object that went to another shard carries the
// object as it was handed, with its own resourceVersion: it was not deleted,
// and if it comes back unchanged its ADDED must not be older than the DELETED
// the handlers were told. An object of this shard that the list lacks was
// deleted, and its DELETED carries the list's resourceVersion.
func TestShardRebalanceDeletesMovedAtTheirOwnVersion(t *testing.T) {
	f := staticFilter(t, 0, 2)
	owned, other := ownedAndNot(t, f)
	v := reflector.NewHanded()
	v.MovedOut = func(obj runtime.Object) bool { return !f.Owns(obj) }
	pod := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	v.Replace([]runtime.Object{pod(owned, "5"), pod(other, "6")})
	got := map[string]string{}
	for _, ev := range v.Diff(nil, "10").Deleted {
		if ev.Type != watch.Deleted {
			t.Errorf("event %s, want DELETED", ev.Type)
		}
		p := ev.Object.(*corev1.Pod)
		got[p.Name] = p.ResourceVersion
	}
	if want := map[string]string{owned: "10", other: "6"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("DELETED resourceVersions %v, want %v (the deleted one at the list's, the moved one at its own)", got, want)
	}
}
