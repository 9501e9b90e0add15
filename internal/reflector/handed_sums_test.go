package reflector

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

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
