package encstore_test

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/encstore"
)

// The differential test: the same random operations on client-go's indexer
// (the oracle) and on an encoded store must give the same answers, read by
// read, field by field. Each read of the encoded store is then changed in
// place, which must change nothing that a later read returns.

// diffIndexers index by namespace (one value per object) and by label
// values (any number), the two shapes of index functions.
func diffIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"labels": func(obj any) ([]string, error) {
			var out []string
			for k, v := range obj.(*corev1.Pod).Labels {
				out = append(out, k+"="+v)
			}
			return out, nil
		},
	}
}

var diffConfigs = []struct {
	name string
	o    encstore.Options
}{
	{"plain", encstore.Options{Compression: encstore.NoCompression}},
	{"zstd", encstore.Options{Compression: encstore.Zstd}},
	{"zstd-dict", encstore.Options{Compression: encstore.ZstdDict, DictSamples: 8}},
	{"zstd-dict-no-hot-cache", encstore.Options{Compression: encstore.ZstdDict, DictSamples: 8, HotCacheBytes: -1}},
	{"zstd-dict-tiny-hot-cache", encstore.Options{Compression: encstore.ZstdDict, DictSamples: 8, HotCacheBytes: 8 << 10}},
	{"s2-dict", encstore.Options{Compression: encstore.S2Dict, DictSamples: 8}},
	{"s2-dict-tiny-hot-cache", encstore.Options{Compression: encstore.S2Dict, DictSamples: 8, HotCacheBytes: 8 << 10}},
}

// randomPod is one of a few names in a few namespaces, with random labels and
// a spec that changes with rv: small, so that a run compares many reads.
func randomPod(rng *rand.Rand, rv int) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("pod-%02d", rng.IntN(40)),
			UID:         "00000000-0000-4000-8000-000000000001",
			Annotations: map[string]string{"note": fmt.Sprint(rng.IntN(1000))},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: fmt.Sprintf("registry.example/app:%d", rng.IntN(5))}}},
	}
	p.Namespace = fmt.Sprintf("ns-%d", rng.IntN(3))
	p.ResourceVersion = fmt.Sprint(rv)
	p.Labels = map[string]string{"app": fmt.Sprintf("app-%d", rng.IntN(4))}
	if rng.IntN(2) == 0 {
		p.Labels["tier"] = fmt.Sprintf("tier-%d", rng.IntN(2))
	}
	p.Spec.NodeName = fmt.Sprintf("node-%d", rv)
	return p
}

func TestStoreAnswersAsClientGoIndexer(t *testing.T) {
	for _, c := range diffConfigs {
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 4; seed++ {
				runDiff(t, c.o, seed)
			}
		})
	}
}

type differ struct {
	t    *testing.T
	seed uint64
	step int
	want cache.Indexer
	got  *encstore.Store
}

func (d *differ) fatalf(format string, args ...any) {
	d.t.Helper()
	d.t.Fatalf("seed %d, step %d: %s", d.seed, d.step, fmt.Sprintf(format, args...))
}

func runDiff(t *testing.T, o encstore.Options, seed uint64) {
	t.Helper()
	o.Codec = newPodCodec()
	o.Indexers = diffIndexers()
	got, err := encstore.NewStore(o)
	if err != nil {
		t.Fatal(err)
	}
	d := &differ{t: t, seed: seed, want: cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, diffIndexers()), got: got}
	rng := rand.New(rand.NewPCG(seed, 42))
	rv := 1
	for d.step = 0; d.step < 120; d.step++ {
		rv++
		switch op := rng.IntN(10); op {
		case 0, 1, 2:
			p := randomPod(rng, rv)
			d.both(func(s cache.Indexer) error { return s.Add(p.DeepCopy()) })
		case 3:
			// An update that keeps the resourceVersion: Upsert keeps the
			// bytes it has, Update must not.
			if keys := d.want.ListKeys(); len(keys) > 0 {
				obj, _, _ := d.want.GetByKey(keys[rng.IntN(len(keys))])
				p := obj.(*corev1.Pod).DeepCopy()
				p.Spec.Hostname = fmt.Sprintf("host-%d", rv)
				d.both(func(s cache.Indexer) error { return s.Update(p.DeepCopy()) })
			}
		case 4:
			p := randomPod(rng, rv)
			d.both(func(s cache.Indexer) error { return s.Delete(p.DeepCopy()) })
		case 5:
			if rng.IntN(4) == 0 {
				var list []*corev1.Pod
				for range rng.IntN(30) {
					rv++
					list = append(list, randomPod(rng, rv))
				}
				d.both(func(s cache.Indexer) error {
					items := make([]any, len(list))
					for i, p := range list {
						items[i] = p.DeepCopy()
					}
					return s.Replace(items, fmt.Sprint(rv))
				})
			}
		}
		d.compareReads(rng)
	}
}

func (d *differ) both(op func(cache.Indexer) error) {
	d.t.Helper()
	errWant, errGot := op(d.want), op(d.got)
	if (errWant == nil) != (errGot == nil) {
		d.fatalf("client-go's error %v, the encoded store's %v", errWant, errGot)
	}
}

var podCmp = []cmp.Option{cmpopts.EquateEmpty()}

// diff is cmp.Diff, called only when a quick semantic comparison fails: cmp
// is slow, and the test compares every read.
func diff(want, got any) string {
	if apiequality.Semantic.DeepEqual(want, got) {
		return ""
	}
	return cmp.Diff(want, got, podCmp...)
}

func byKey(objs []any) []any {
	sort.Slice(objs, func(i, j int) bool {
		ki, _ := cache.MetaNamespaceKeyFunc(objs[i])
		kj, _ := cache.MetaNamespaceKeyFunc(objs[j])
		return ki < kj
	})
	return objs
}

// compareReads reads the same things from both stores and compares them,
// then changes what the encoded store returned.
func (d *differ) compareReads(rng *rand.Rand) {
	d.t.Helper()
	if diff := cmp.Diff(sortedStrings(d.want.ListKeys()), sortedStrings(d.got.ListKeys())); diff != "" {
		d.fatalf("keys (-client-go +encoded):\n%s", diff)
	}
	if w, g := d.want.LastStoreSyncResourceVersion(), d.got.LastStoreSyncResourceVersion(); w != g {
		d.fatalf("LastStoreSyncResourceVersion: client-go %q, encoded %q", w, g)
	}
	var returned []any
	keys := d.want.ListKeys()
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for _, key := range keys[:min(len(keys), 6)] {
		w, _, _ := d.want.GetByKey(key)
		g, exists, err := d.got.GetByKey(key)
		if err != nil || !exists {
			d.fatalf("GetByKey(%q): exists %v, err %v", key, exists, err)
		}
		if diff := diff(w, g); diff != "" {
			d.fatalf("GetByKey(%q) (-client-go +encoded):\n%s", key, diff)
		}
		returned = append(returned, g)
	}
	if diff := diff(byKey(d.want.List()), byKey(d.got.List())); diff != "" {
		d.fatalf("List (-client-go +encoded):\n%s", diff)
	}
	ns := fmt.Sprintf("ns-%d", rng.IntN(3))
	label := fmt.Sprintf("app=app-%d", rng.IntN(4))
	for _, q := range [][2]string{{cache.NamespaceIndex, ns}, {"labels", label}} {
		w, errW := d.want.ByIndex(q[0], q[1])
		g, errG := d.got.ByIndex(q[0], q[1])
		if errW != nil || errG != nil {
			d.fatalf("ByIndex(%s): %v, %v", q, errW, errG)
		}
		if diff := diff(byKey(w), byKey(g)); diff != "" {
			d.fatalf("ByIndex(%s) (-client-go +encoded):\n%s", q, diff)
		}
		returned = append(returned, g...)
		wk, _ := d.want.IndexKeys(q[0], q[1])
		gk, _ := d.got.IndexKeys(q[0], q[1])
		if diff := cmp.Diff(sortedStrings(wk), sortedStrings(gk), podCmp...); diff != "" {
			d.fatalf("IndexKeys(%s) (-client-go +encoded):\n%s", q, diff)
		}
		if diff := cmp.Diff(sortedStrings(d.want.ListIndexFuncValues(q[0])), sortedStrings(d.got.ListIndexFuncValues(q[0])), podCmp...); diff != "" {
			d.fatalf("ListIndexFuncValues(%s) (-client-go +encoded):\n%s", q[0], diff)
		}
	}
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Labels: map[string]string{"app": "app-1", "tier": "tier-0"}}}
	for _, name := range []string{cache.NamespaceIndex, "labels"} {
		w, _ := d.want.Index(name, probe)
		g, _ := d.got.Index(name, probe)
		if diff := diff(byKey(w), byKey(g)); diff != "" {
			d.fatalf("Index(%s) (-client-go +encoded):\n%s", name, diff)
		}
	}
	// The caller owns what it read: change it all.
	for _, obj := range returned {
		p := obj.(*corev1.Pod)
		p.Labels["app"] = "changed-by-the-caller"
		p.Spec.Containers[0].Image = "changed-by-the-caller"
		p.ResourceVersion = "0"
	}
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
