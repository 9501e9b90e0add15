package encstore_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/encstore"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// countingCodec counts the objects it encodes and decodes.
type countingCodec struct {
	encstore.Codec
	encodes, decodes atomic.Int64
}

func (c *countingCodec) Encode(dst []byte, obj runtime.Object) ([]byte, error) {
	c.encodes.Add(1)
	return c.Codec.Encode(dst, obj)
}

func (c *countingCodec) Decode(data []byte) (runtime.Object, error) {
	c.decodes.Add(1)
	return c.Codec.Decode(data)
}

func newStore(t *testing.T, o encstore.Options) (*encstore.Store, *countingCodec) {
	t.Helper()
	c := &countingCodec{Codec: newPodCodec()}
	o.Codec = c
	if o.Indexers == nil {
		o.Indexers = namespaceIndex
	}
	s, err := encstore.NewStore(o)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func getPod(t *testing.T, s cache.Store, key string) *corev1.Pod {
	t.Helper()
	obj, exists, err := s.GetByKey(key)
	if err != nil || !exists {
		t.Fatalf("GetByKey(%q): exists %v, err %v", key, exists, err)
	}
	return obj.(*corev1.Pod)
}

func TestHotCacheServesRepeatedReadsWithCopies(t *testing.T) {
	s, c := newStore(t, encstore.Options{})
	p := storedPod(1, "")
	if err := s.Add(p.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	key := p.Namespace + "/" + p.Name
	first := getPod(t, s, key)
	if c.decodes.Load() != 1 {
		t.Fatalf("first read decoded %d objects, want 1", c.decodes.Load())
	}
	first.Labels["changed"] = "by the caller"
	first.Spec.Containers[0].Env = nil
	second := getPod(t, s, key)
	if c.decodes.Load() != 1 {
		t.Fatalf("a second read of an unchanged object decoded again (%d decodes)", c.decodes.Load())
	}
	if diff := cmp.Diff(p, second); diff != "" {
		t.Fatalf("the hot cache's copy differs from the stored Pod, after the caller changed the first read (-stored +read):\n%s", diff)
	}
	if second == first {
		t.Fatal("two reads returned the same object")
	}
	second.Labels["changed"] = "again"
	if third := getPod(t, s, key); third.Labels["changed"] != "" {
		t.Fatal("a change to a hot-cache read reached the hot cache")
	}
	if st := s.Stats(); st.HotHits != 2 || st.HotObjects != 1 {
		t.Fatalf("hot cache stats %+v, want 2 hits and 1 object", st)
	}
}

// TestSharedReadsHandOutTheHotObject: under SharedReads a hot read returns the
// hot cache's object itself, decoded once and never copied, until the object
// changes; a List then returns the same object.
func TestSharedReadsHandOutTheHotObject(t *testing.T) {
	s, c := newStore(t, encstore.Options{SharedReads: true})
	p := storedPod(1, "")
	key := p.Namespace + "/" + p.Name
	if err := s.Add(p.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	first := getPod(t, s, key)
	if second := getPod(t, s, key); second != first || c.decodes.Load() != 1 {
		t.Fatalf("two reads: the same object %v, %d decodes; want the same object from one decode", second == first, c.decodes.Load())
	}
	if diff := cmp.Diff(p, first); diff != "" {
		t.Fatalf("the shared object differs from the stored Pod (-stored +read):\n%s", diff)
	}
	if listed := s.List(); len(listed) != 1 || listed[0] != any(first) {
		t.Fatalf("List returned %v, want the hot object", listed)
	}
	p2 := p.DeepCopy()
	p2.ResourceVersion = "99999"
	p2.Spec.NodeName = "another-node"
	if err := s.Update(p2.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	got := getPod(t, s, key)
	if got == first || got.Spec.NodeName != "another-node" || got.ResourceVersion != "99999" {
		t.Fatalf("read %s at %s after an update (the old object: %v), want a new object, another-node at 99999", got.Spec.NodeName, got.ResourceVersion, got == first)
	}
	if first.Spec.NodeName == "another-node" {
		t.Fatal("the update changed the object a reader held")
	}
}

func TestHotCacheForgetsAnObjectWhoseResourceVersionChanged(t *testing.T) {
	s, _ := newStore(t, encstore.Options{})
	p := storedPod(1, "")
	key := p.Namespace + "/" + p.Name
	if err := s.Add(p.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	getPod(t, s, key) // now hot
	p2 := p.DeepCopy()
	p2.ResourceVersion = "99999"
	p2.Spec.NodeName = "another-node"
	if err := s.Update(p2.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if got := getPod(t, s, key); got.Spec.NodeName != "another-node" || got.ResourceVersion != "99999" {
		t.Fatalf("read %s at %s after an update, want another-node at 99999", got.Spec.NodeName, got.ResourceVersion)
	}
}

func TestUpsertKeepsAnUnchangedObjectWithoutEncoding(t *testing.T) {
	s, c := newStore(t, encstore.Options{})
	p := storedPod(1, "")
	existed, _, _, err := s.Upsert(p.DeepCopy())
	if err != nil || existed {
		t.Fatalf("first Upsert: existed %v, err %v", existed, err)
	}
	encodes := c.encodes.Load()
	existed, oldRV, old, err := s.Upsert(p.DeepCopy())
	if err != nil || !existed || oldRV != p.ResourceVersion {
		t.Fatalf("Upsert of the same version: existed %v, oldRV %q, err %v", existed, oldRV, err)
	}
	if c.encodes.Load() != encodes {
		t.Fatal("Upsert of an unchanged object encoded it")
	}
	if c.decodes.Load() != 0 {
		t.Fatal("Upsert decoded the old object before anyone asked for it")
	}
	o, err := old()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, o); diff != "" {
		t.Fatalf("old object (-stored +old):\n%s", diff)
	}

	// A new version: the old object comes from the hot cache when it is there.
	getPod(t, s, p.Namespace+"/"+p.Name)
	decodes := c.decodes.Load()
	p2 := p.DeepCopy()
	p2.ResourceVersion = "5000"
	existed, oldRV, old, err = s.Upsert(p2)
	if err != nil || !existed || oldRV != p.ResourceVersion {
		t.Fatalf("Upsert of a new version: existed %v, oldRV %q, err %v", existed, oldRV, err)
	}
	o, err = old()
	if err != nil {
		t.Fatal(err)
	}
	if c.decodes.Load() != decodes {
		t.Fatal("the old object was decoded although the hot cache held it")
	}
	if o.(*corev1.Pod).ResourceVersion != p.ResourceVersion {
		t.Fatalf("old object at %s, want %s", o.(*corev1.Pod).ResourceVersion, p.ResourceVersion)
	}
	if got := getPod(t, s, p.Namespace+"/"+p.Name); got.ResourceVersion != "5000" {
		t.Fatalf("after Upsert the store holds version %s, want 5000", got.ResourceVersion)
	}
}

func TestUpdateOfTheSameVersionStoresTheNewContent(t *testing.T) {
	// Update and Replace are client-go's: exact, even when a caller changes
	// an object without changing its resourceVersion.
	s, _ := newStore(t, encstore.Options{})
	p := storedPod(1, "")
	if err := s.Add(p.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	p.Spec.NodeName = "changed"
	if err := s.Update(p.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if got := getPod(t, s, p.Namespace+"/"+p.Name); got.Spec.NodeName != "changed" {
		t.Fatalf("node %q after Update, want changed", got.Spec.NodeName)
	}
}

func TestBytesInHandAreKeptWithoutEncoding(t *testing.T) {
	p := storedPod(3, "")
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var handed atomic.Int64
	s, c := newStore(t, encstore.Options{Encoded: func(obj any) ([]byte, bool) {
		if obj.(*corev1.Pod).Name != p.Name {
			return nil, false
		}
		handed.Add(1)
		return data, true
	}})
	if err := s.Add(p.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	q := storedPod(4, "")
	if err := s.AddEncoded(q.DeepCopy(), mustMarshal(t, q)); err != nil {
		t.Fatal(err)
	}
	if c.encodes.Load() != 0 || handed.Load() != 1 {
		t.Fatalf("encoded %d objects and took %d from Options.Encoded, want 0 and 1", c.encodes.Load(), handed.Load())
	}
	for _, want := range []*corev1.Pod{p, q} {
		if diff := cmp.Diff(want, getPod(t, s, want.Namespace+"/"+want.Name)); diff != "" {
			t.Fatalf("read of %s (-given +read):\n%s", want.Name, diff)
		}
	}
}

func mustMarshal(t *testing.T, p *corev1.Pod) []byte {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDictionaryIsTrainedOnTheFirstObjects(t *testing.T) {
	for _, c := range []encstore.Compression{encstore.ZstdDict, encstore.S2Dict} {
		t.Run(c.String(), func(t *testing.T) { testDictionaryTrained(t, c) })
	}
}

func testDictionaryTrained(t *testing.T, c encstore.Compression) {
	s, _ := newStore(t, encstore.Options{DictSamples: 64, Compression: c})
	pods := storedPods(200, dataset.PodsUnique)
	for _, p := range pods[:63] {
		if err := s.Add(p.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	before := s.Stats()
	if before.DictBytes != 0 {
		t.Fatalf("a dictionary after %d objects, want none before 64", before.Objects)
	}
	for _, p := range pods[63:] {
		if err := s.Add(p.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	after := s.Stats()
	if after.DictBytes == 0 || after.DictError != "" {
		t.Fatalf("no dictionary after %d objects: %+v", after.Objects, after)
	}
	plainPerObject := float64(before.KeptBytes) / float64(before.Objects)
	perObject := float64(after.KeptBytes) / float64(after.Objects)
	if perObject > plainPerObject/3 {
		t.Fatalf("%.0f bytes kept per object with the dictionary, %.0f before: want a third at most", perObject, plainPerObject)
	}
	for _, p := range pods {
		if diff := cmp.Diff(p, getPod(t, s, p.Namespace+"/"+p.Name)); diff != "" {
			t.Fatalf("read of %s (-given +read):\n%s", p.Name, diff)
		}
	}
}

func TestTooFewObjectsToTrainFallBackToZstd(t *testing.T) {
	s, _ := newStore(t, encstore.Options{DictSamples: 2})
	tiny := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "a", ResourceVersion: "1"}}
	}
	for _, n := range []string{"a", "b", "c"} {
		if err := s.Add(tiny(n)); err != nil {
			t.Fatal(err)
		}
	}
	st := s.Stats()
	if st.DictError == "" {
		t.Skipf("the dictionary builder trained on two tiny objects (%d bytes)", st.DictBytes)
	}
	for _, n := range []string{"a", "b", "c"} {
		if got := getPod(t, s, "a/"+n); got.Name != n {
			t.Fatalf("read %q, want %q", got.Name, n)
		}
	}
}

func TestBadInputIsAnErrorAndChangesNothing(t *testing.T) {
	failing := cache.Indexers{"fails": func(obj any) ([]string, error) {
		if obj.(*corev1.Pod).Name == "bad" {
			return nil, errors.New("no value for a bad Pod")
		}
		return []string{"ok"}, nil
	}}
	s, _ := newStore(t, encstore.Options{Indexers: failing})
	good := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: "a", ResourceVersion: "1"}}
	if err := s.Add(good); err != nil {
		t.Fatal(err)
	}
	bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "a", ResourceVersion: "2"}}
	err := s.Add(bad)
	if err == nil || !strings.Contains(err.Error(), "a/bad") {
		t.Fatalf("Add of an object its index cannot take: %v, want an error naming a/bad", err)
	}
	if keys := s.ListKeys(); len(keys) != 1 {
		t.Fatalf("keys %v after a failed Add, want [a/good]", keys)
	}
	if err := s.Add("a string"); err == nil {
		t.Fatal("Add of a string succeeded")
	}
	if err := s.AddIndexers(cache.Indexers{"fails": failing["fails"]}); err == nil {
		t.Fatal("AddIndexers of a name already there succeeded")
	}
	// An index that cannot index a stored object is refused whole.
	if err := s.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "b"}}); err != nil {
		t.Fatal(err)
	}
	err = s.AddIndexers(cache.Indexers{"no-b": func(obj any) ([]string, error) {
		if obj.(*corev1.Pod).Namespace == "b" {
			return nil, errors.New("namespace b")
		}
		return nil, nil
	}})
	if err == nil {
		t.Fatal("AddIndexers whose function fails on a stored object succeeded")
	}
	if _, ok := s.GetIndexers()["no-b"]; ok {
		t.Fatal("a refused indexer is in GetIndexers")
	}
	if _, err := s.ByIndex("no-b", ""); err == nil {
		t.Fatal("ByIndex on a refused indexer succeeded")
	}
}

func TestReplaceChangesTheStoreInPlace(t *testing.T) {
	s, c := newStore(t, encstore.Options{})
	pods := storedPods(20, "")
	for _, p := range pods[:10] {
		if err := s.Add(p.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	encodes := c.encodes.Load()
	// Keep 5 unchanged, change 5, add 10.
	var list []any
	for i, p := range pods[5:] {
		q := p.DeepCopy()
		if i < 5 && i%2 == 0 {
			q.ResourceVersion = fmt.Sprint(50000 + i)
		}
		list = append(list, q)
	}
	if err := s.Replace(list, "60000"); err != nil {
		t.Fatal(err)
	}
	if got := c.encodes.Load() - encodes; got != 13 {
		t.Fatalf("Replace encoded %d objects, want 13 (3 changed, 10 new; 2 unchanged kept)", got)
	}
	keys := map[string]bool{}
	for _, k := range s.ListKeys() {
		keys[k] = true
	}
	for i, p := range pods {
		if keys[p.Namespace+"/"+p.Name] != (i >= 5) {
			t.Fatalf("after Replace, %s present: %v", p.Name, keys[p.Namespace+"/"+p.Name])
		}
	}
	if s.LastStoreSyncResourceVersion() != "60000" {
		t.Fatalf("store resourceVersion %q, want the list's", s.LastStoreSyncResourceVersion())
	}
	byNS, err := s.ByIndex(cache.NamespaceIndex, pods[0].Namespace)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range byNS {
		if obj.(*corev1.Pod).Name == pods[0].Name {
			t.Fatal("the index still holds a replaced-away object")
		}
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	if _, err := encstore.NewStore(encstore.Options{}); err == nil {
		t.Fatal("New without a codec succeeded")
	}
	if _, err := encstore.NewStore(encstore.Options{Codec: newPodCodec(), Compression: encstore.Compression(9)}); err == nil {
		t.Fatal("New with an unknown compression succeeded")
	}
}
