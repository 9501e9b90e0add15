package encstore_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/encstore"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// A list packed object by object, the dictionary trained on its first objects
// while the rest are packed, then stored from the packs: every object reads
// back as it was packed, the store keeps the packs' bytes without encoding
// again and compresses those packed plain before the dictionary existed, and a
// pack of a version the store holds changes nothing.
func TestPackedObjectsAreStoredAsPacked(t *testing.T) {
	s, c := newStore(t, encstore.Options{DictSamples: 64})
	pods := storedPods(200, dataset.PodsUnique)
	var packs []*encstore.Packed
	for _, p := range pods {
		packed, err := s.Pack(p.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if key, err := cache.MetaNamespaceKeyFunc(packed); err != nil || key != p.Namespace+"/"+p.Name {
			t.Fatalf("key of the pack of %s/%s: %q, %v", p.Namespace, p.Name, key, err)
		}
		if m, err := meta.Accessor(packed); err != nil || m.GetUID() != p.UID || m.GetResourceVersion() != p.ResourceVersion {
			t.Fatalf("metadata of the pack of %s: %v", p.Name, err)
		}
		packs = append(packs, packed)
	}
	if s.Stats().Objects != 0 {
		t.Fatal("Pack stored an object")
	}
	if st := s.Stats(); st.DictBytes == 0 {
		t.Fatalf("no dictionary after packing %d objects: %+v", len(pods), st)
	}
	encodes := c.encodes.Load()
	for i, packed := range packs {
		if !s.IsPacked(packed) {
			t.Fatal("IsPacked is false for the store's own pack")
		}
		obj, err := s.Unpack(packed)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(pods[i], obj); diff != "" {
			t.Fatalf("unpacked %s (-packed +unpacked):\n%s", pods[i].Name, diff)
		}
		if existed, _, _, err := s.UpsertPacked(packed, obj); err != nil || existed {
			t.Fatalf("UpsertPacked of %s: existed %v, err %v", pods[i].Name, existed, err)
		}
	}
	if c.encodes.Load() != encodes {
		t.Fatalf("storing the packs encoded %d objects, want none", c.encodes.Load()-encodes)
	}
	packedStats := s.Stats()

	plain, _ := newStore(t, encstore.Options{DictSamples: 64})
	for _, p := range pods {
		if err := plain.Add(p.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	if added := plain.Stats(); packedStats.KeptBytes > added.KeptBytes*11/10 {
		t.Fatalf("the store keeps %d bytes of packs, %d of the same objects added: want the packs compressed as well", packedStats.KeptBytes, added.KeptBytes)
	}
	for _, p := range pods {
		if diff := cmp.Diff(p, getPod(t, s, p.Namespace+"/"+p.Name)); diff != "" {
			t.Fatalf("read of %s (-packed +read):\n%s", p.Name, diff)
		}
	}
	if ns := pods[0].Namespace; len(mustByIndex(t, s, ns)) != len(mustByIndex(t, plain, ns)) {
		t.Fatal("the packs' index values differ from those of the same objects added")
	}

	// Packing a version the store holds, then storing it, keeps the bytes.
	again, err := s.Pack(pods[7].DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	obj, err := s.Unpack(again)
	if err != nil {
		t.Fatal(err)
	}
	existed, oldRV, _, err := s.UpsertPacked(again, obj)
	if err != nil || !existed || oldRV != pods[7].ResourceVersion {
		t.Fatalf("UpsertPacked of the held version: existed %v, oldRV %q, err %v", existed, oldRV, err)
	}

	// A changed version packed while the store holds the old one is the
	// new version: encoded anew, not the stored bytes, and stored.
	changed := pods[8].DeepCopy()
	changed.ResourceVersion, changed.Labels = "90001", map[string]string{"changed": "yes"}
	newer, err := s.Pack(changed.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if s.KeepPacked(newer) {
		t.Fatal("KeepPacked is true for a version the store does not hold")
	}
	obj, err = s.Unpack(newer)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(changed, obj); diff != "" {
		t.Fatalf("unpacked changed version (-packed +unpacked):\n%s", diff)
	}
	if existed, oldRV, _, err := s.UpsertPacked(newer, obj); err != nil || !existed || oldRV != pods[8].ResourceVersion {
		t.Fatalf("UpsertPacked of a changed version: existed %v, oldRV %q, err %v", existed, oldRV, err)
	}
	if diff := cmp.Diff(changed, getPod(t, s, changed.Namespace+"/"+changed.Name)); diff != "" {
		t.Fatalf("read of the changed version (-packed +read):\n%s", diff)
	}
	if !s.KeepPacked(newer) {
		t.Fatal("KeepPacked is false for the version the store holds")
	}

	// Another store's pack is not this store's.
	other, _ := newStore(t, encstore.Options{})
	if other.IsPacked(again) {
		t.Fatal("IsPacked is true for another store's pack")
	}
	if _, err := other.Unpack(again); err == nil {
		t.Fatal("Unpack of another store's pack succeeded")
	}
	if _, _, _, err := other.UpsertPacked(again, obj); err == nil || other.Stats().Objects != 0 {
		t.Fatalf("UpsertPacked of another store's pack: err %v, %d objects stored", err, other.Stats().Objects)
	}
}

func mustByIndex(t *testing.T, s cache.Indexer, namespace string) []any {
	t.Helper()
	objs, err := s.ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// A pack's metadata reads without allocating, through meta.Accessor as
// client-go's queue reads it for every key: a new metav1.ObjectMeta at each
// read made a quarter of a kilobyte of garbage per key computed and per
// comparison of a sort by resourceVersion, megabytes at once at the end of a
// re-list of a few thousand changed objects.
func TestPackedMetadataReadsWithoutAllocating(t *testing.T) {
	s, _ := newStore(t, encstore.Options{})
	pod := storedPods(1, dataset.PodsUnique)[0]
	packed, err := s.Pack(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	var rv string
	allocs := testing.AllocsPerRun(100, func() {
		m, err := meta.Accessor(packed)
		if err != nil {
			t.Fatal(err)
		}
		rv = m.GetResourceVersion()
	})
	if rv != pod.ResourceVersion || allocs != 0 {
		t.Fatalf("meta.Accessor of a pack: resourceVersion %q (want %q), %.0f allocations (want 0)", rv, pod.ResourceVersion, allocs)
	}
	m, _ := meta.Accessor(packed)
	m.SetResourceVersion("1") // a pack's metadata is its bytes': setters change nothing
	m.SetLabels(map[string]string{"a": "b"})
	if packed.GetResourceVersion() != pod.ResourceVersion || packed.GetNamespace() != pod.Namespace || packed.GetName() != pod.Name || packed.GetUID() != pod.UID || packed.GetLabels() != nil {
		t.Fatalf("pack's metadata after setters: %+v, want the Pod's namespace, name, uid and resourceVersion only", packed.Identity)
	}
}
