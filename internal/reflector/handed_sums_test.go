package reflector

import (
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/internal/objmeta"
	"github.com/cachetune/cachetune/internal/wire"
)

func identityOf(p *corev1.Pod) wire.Identity {
	return wire.Identity{Namespace: []byte(p.Namespace), Name: []byte(p.Name), UID: []byte(p.UID), ResourceVersion: []byte(p.ResourceVersion)}
}

// TestHandedPriorOnlyOfItsVersion: the digests kept for a key vouch only for
// the handed object of the version they were read from, and go with the key.
func TestHandedPriorOnlyOfItsVersion(t *testing.T) {
	v := NewHanded()
	v2, v3 := testPod("a", "2"), testPod("a", "3")
	sums := func(p *corev1.Pod) wire.FieldSums {
		return wire.FieldSums{Version: wire.VersionOf([]byte(p.UID), []byte(p.ResourceVersion))}
	}
	v.Replace([]runtime.Object{v2})
	v.keepSums(identityOf(v2), sums(v2))
	if obj, _, ok := v.prior(identityOf(v3)); !ok || obj != v2 {
		t.Fatalf("prior of the next version = %v, %v; want the handed version 2", obj, ok)
	}
	// Version 3 decoded, not yet handed: its digests are not version 2's.
	v.keepSums(identityOf(v3), sums(v3))
	if _, _, ok := v.prior(identityOf(v3)); ok {
		t.Fatal("digests of version 3 vouch for the handed version 2")
	}
	v.Apply(watch.Event{Type: watch.Modified, Object: v3})
	if obj, _, ok := v.prior(identityOf(v3)); !ok || obj != v3 {
		t.Fatalf("prior once version 3 is handed = %v, %v", obj, ok)
	}
	v.Apply(watch.Event{Type: watch.Deleted, Object: v3})
	if len(v.sums) != 0 {
		t.Fatalf("a deleted key kept its digests: %d entries", len(v.sums))
	}
	// A list that no longer has a key drops its digests.
	b := testPod("b", "5")
	v.Replace([]runtime.Object{b})
	v.keepSums(identityOf(b), sums(b))
	v.keepSums(identityOf(v3), sums(v3))
	v.Replace([]runtime.Object{b})
	if len(v.sums) != 1 {
		t.Fatalf("after a list of b alone: %d digests kept, want 1", len(v.sums))
	}
}

// A re-list's Diff reads the metadata of its changed objects without
// allocating: a sort of a few thousand changed packs by resourceVersion reads
// it tens of thousands of times, and a copy of the metadata at each read (the
// records' and packs' GetObjectMeta before objmeta.Identity) made megabytes
// of garbage at once, the encoded store's re-list peak.
func TestDiffAllocatesPerListNotPerChange(t *testing.T) {
	const n = 2000
	v := NewHanded()
	handed := make([]runtime.Object, n)
	listed := make([]runtime.Object, n)
	for i := range n {
		name := fmt.Sprintf("p%04d", i)
		handed[i] = &Record{objmeta.Identity{Namespace: "ns", Name: name, UID: name, ResourceVersion: strconv.Itoa(100 + i)}}
		// Newer versions, in the reverse order: the sort moves every one.
		listed[i] = &Record{objmeta.Identity{Namespace: "ns", Name: name, UID: name, ResourceVersion: strconv.Itoa(100 + 2*n - i)}}
	}
	v.Replace(handed)
	var changes Changes
	allocs := testing.AllocsPerRun(3, func() { changes = v.Diff(listed, "9999") })
	if len(changes.Changed) != n || len(changes.Deleted) != 0 {
		t.Fatalf("Diff: %d changed, %d deleted; want %d changed", len(changes.Changed), len(changes.Deleted), n)
	}
	if first := changes.Changed[0].Object.(*Record); first.Name != fmt.Sprintf("p%04d", n-1) {
		t.Fatalf("first change %s, want the oldest version, p%04d", first.Name, n-1)
	}
	if allocs > 40 {
		t.Fatalf("Diff of %d changed objects made %.0f allocations; want a few slices, not some per object", n, allocs)
	}
}

// TestHandedReplaceMakesItsMapOnce: a list larger than any the set held makes
// the set's map at the list's size at once, rather than growing it one key at
// a time (the first list's garbage, which the start-up peak holds); a re-list
// of the same size reuses it.
func TestHandedReplaceMakesItsMapOnce(t *testing.T) {
	const n = 10000
	items := make([]runtime.Object, n)
	for i := range n {
		name := fmt.Sprintf("p%05d", i)
		items[i] = &Record{objmeta.Identity{Namespace: "ns", Name: name, UID: name, ResourceVersion: "1"}}
	}
	// What a map made at the list's size costs, as the reference.
	made := testing.AllocsPerRun(3, func() { _ = make(map[uint64]runtime.Object, n) })
	first := testing.AllocsPerRun(3, func() { NewHanded().Replace(items) })
	if first > made+4 { // the set itself: its struct and its first, empty map
		t.Errorf("a first list of %d objects made %.0f allocations; a map made at its size takes %.0f", n, first, made)
	}
	v := NewHanded()
	v.Replace(items)
	if again := testing.AllocsPerRun(3, func() { v.Replace(items) }); again > 0 {
		t.Errorf("a re-list of the same size made %.0f allocations; want none", again)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		name := fmt.Sprintf("p%05d", i)
		if _, ok := v.Get("ns", name); !ok {
			t.Fatalf("the set does not hold ns/%s", name)
		}
	}
}
