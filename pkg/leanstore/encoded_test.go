package leanstore_test

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

var encodedFlavours = []string{"typed", "metadata", "dynamic"}

// appIndex indexes Pods by their app label, in every flavour.
const appIndex = "app"

func byApp(obj any) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if v := m.GetLabels()["app.kubernetes.io/name"]; v != "" {
		return []string{v}, nil
	}
	return nil, nil
}

// encodedPods builds (does not start) a Pods informer of flavour over an
// encoded store, in a factory of its own.
func encodedPods(t *testing.T, cfg *rest.Config, flavour string, opts ...leanstore.Option) (leanFactory, cache.SharedIndexInformer) {
	t.Helper()
	opts = append([]leanstore.Option{leanstore.WithEncodedStore(leanstore.EncodedStore{})}, opts...)
	switch flavour {
	case "typed":
		f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(cfg), 0, opts...)
		return f, f.Core().V1().Pods().Informer()
	case "metadata":
		f := leanstore.NewMetadataSharedInformerFactory(metadata.NewForConfigOrDie(cfg), 0, opts...)
		return f, f.ForResource(dataset.PodsGVR).Informer()
	case "dynamic":
		f := leanstore.NewDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(cfg), 0, opts...)
		return f, f.ForResource(dataset.PodsGVR).Informer()
	}
	t.Fatalf("unknown flavour %q", flavour)
	return nil, nil
}

// referencePods is client-go's own Pods informer of flavour in ns, its objects
// stripped as leanstore strips them with WithStripLastApplied.
func referencePods(t *testing.T, flavour, ns string) cache.SharedIndexInformer {
	t.Helper()
	var inf cache.SharedIndexInformer
	switch flavour {
	case "typed":
		inf = informers.NewSharedInformerFactoryWithOptions(srv.Clientset(), 0, informers.WithNamespace(ns)).Core().V1().Pods().Informer()
	case "metadata":
		inf = metadatainformer.NewFilteredSharedInformerFactory(metadata.NewForConfigOrDie(srv.Config), 0, ns, nil).ForResource(dataset.PodsGVR).Informer()
	case "dynamic":
		inf = dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(srv.Config), 0, ns, nil).ForResource(dataset.PodsGVR).Informer()
	}
	if err := inf.SetTransform(leanstore.Transform(leanstore.WithStripLastApplied())); err != nil {
		t.Fatal(err)
	}
	if err := inf.AddIndexers(cache.Indexers{appIndex: byApp}); err != nil {
		t.Fatal(err)
	}
	return inf
}

// runInformers runs infs until the test ends, and waits for them to stop.
func runInformers(t *testing.T, ctx context.Context, infs ...cache.SharedIndexInformer) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, inf := range infs {
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, inf := range infs {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatal("informer did not sync")
		}
	}
}

// sameObjects fails unless got's store holds exactly want's keys, each
// object semantically equal to want's.
func sameObjects(t *testing.T, want, got cache.Store) {
	t.Helper()
	wantKeys, gotKeys := want.ListKeys(), got.ListKeys()
	slices.Sort(wantKeys)
	slices.Sort(gotKeys)
	if !slices.Equal(wantKeys, gotKeys) {
		t.Fatalf("keys %v, want %v", gotKeys, wantKeys)
	}
	for _, k := range wantKeys {
		w, _, _ := want.GetByKey(k)
		g, ok, err := got.GetByKey(k)
		if err != nil || !ok {
			t.Fatalf("GetByKey(%s) = %v, %v", k, ok, err)
		}
		if !equality.Semantic.DeepEqual(w, g) {
			t.Errorf("%s differs from client-go's:\n got  %#v\n want %#v", k, g, w)
		}
	}
}

func labelsOf(obj any) map[string]string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return m.GetLabels()
}

// TestEncodedStoreIsClientGos: the typed, metadata and dynamic informers of an
// encoded store sync, follow creates, updates and deletes, and hold objects
// equal to client-go's (stripped the same way); a read returns an object the
// caller owns; indexes, ByIndex and handlers work as in client-go; and the
// view holds records, not objects.
func TestEncodedStoreIsClientGos(t *testing.T) {
	for _, flavour := range encodedFlavours {
		t.Run(flavour, func(t *testing.T) { testEncodedStore(t, flavour) })
	}
}

func testEncodedStore(t *testing.T, flavour string) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 12)

	f, inf := encodedPods(t, srv.Config, flavour, leanstore.WithNamespace(ns), leanstore.WithStripLastApplied())
	defer f.Shutdown()
	if err := inf.AddIndexers(cache.Indexers{appIndex: byApp}); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	reg, err := inf.AddEventHandler(rec.handler())
	if err != nil {
		t.Fatal(err)
	}
	ref := referencePods(t, flavour, ns)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	f.StartWithContext(runCtx)
	runInformers(t, runCtx, ref)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, reg.HasSynced) {
		t.Fatal("the encoded informer did not sync")
	}
	li := leanstore.Unwrap(inf)
	if n, ok := li.EncodedStatsForTest(); !ok || n != 12 {
		t.Fatalf("encoded store holds %d objects (encoded: %v), want 12", n, ok)
	}
	if st := li.Status().Encoded; st == nil || st.Objects != 12 || st.Compression != "s2-dict" || st.KeptBytes == 0 {
		t.Errorf("Status().Encoded = %+v, want 12 objects kept with s2-dict", st)
	}
	// Census estimates from the kept bytes, without decoding (Decodes
	// does not move).
	decodes := li.Status().Encoded.Decodes
	if c := li.Census(); c.Objects != 12 || c.BytesPerObject <= 0 || li.Status().Encoded.Decodes != decodes {
		t.Errorf("Census() = %+v (decodes %d then %d), want 12 objects estimated without a decode", c, decodes, li.Status().Encoded.Decodes)
	}
	sameObjects(t, ref.GetStore(), inf.GetStore())

	// A read is the caller's: changing it does not change the next read,
	// from the decoder or from the hot cache.
	key := inf.GetStore().ListKeys()[0]
	for range 3 {
		obj, _, _ := inf.GetStore().GetByKey(key)
		if labelsOf(obj)["mutated"] != "" {
			t.Fatal("a change to a read object reached the store")
		}
		m, _ := meta.Accessor(obj)
		l := m.GetLabels()
		l["mutated"] = "yes"
		m.SetLabels(l)
	}
	for _, obj := range inf.GetStore().List() {
		m, _ := meta.Accessor(obj)
		m.SetName("changed")
	}
	sameObjects(t, ref.GetStore(), inf.GetStore())

	// Creates, updates and deletes.
	pods := srv.Clientset().CoreV1().Pods(ns)
	keys := inf.GetStore().ListKeys()
	slices.Sort(keys)
	_, delName, _ := cache.SplitMetaNamespaceKey(keys[0])
	_, patchName, _ := cache.SplitMetaNamespaceKey(keys[1])
	if err := pods.Delete(ctx, delName, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Patch(ctx, patchName, types.MergePatchType, []byte(`{"metadata":{"labels":{"changed":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	extra := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "extra", Labels: map[string]string{"app.kubernetes.io/name": "extra"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := pods.Create(ctx, extra, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := serverState(t, ctx, ns)
	waitFor(t, ctx, "the encoded store to converge", func() bool { return maps.Equal(cacheState(inf), want) })
	waitFor(t, ctx, "client-go to converge", func() bool { return maps.Equal(cacheState(ref), want) })
	sameObjects(t, ref.GetStore(), inf.GetStore())
	waitFor(t, ctx, "the handler's events", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return rec.adds[ns+"/extra"] == 1 && rec.updates[ns+"/"+patchName] >= 1 && rec.deletes[ns+"/"+delName] == 1
	})
	rec.mu.Lock()
	if len(rec.adds) != 13 {
		t.Errorf("handler saw adds of %d objects, want 13", len(rec.adds))
	}
	rec.mu.Unlock()

	// Indexes: ByIndex gives client-go's objects for every value.
	for _, v := range ref.GetIndexer().ListIndexFuncValues(appIndex) {
		w, _ := ref.GetIndexer().ByIndex(appIndex, v)
		g, err := inf.GetIndexer().ByIndex(appIndex, v)
		if err != nil || len(g) != len(w) {
			t.Fatalf("ByIndex(%s) = %d objects, %v; want %d", v, len(g), err, len(w))
		}
		sortByKey(w)
		sortByKey(g)
		for i := range w {
			if !equality.Semantic.DeepEqual(w[i], g[i]) {
				t.Errorf("ByIndex(%s)[%d] differs from client-go's", v, i)
			}
		}
	}
	if g, _ := inf.GetIndexer().ByIndex(appIndex, "extra"); len(g) != 1 {
		t.Errorf("ByIndex(extra) = %d objects, want 1", len(g))
	}

	// The view keeps records only: no decoded object stays alive in it.
	records, objects := li.ViewForTest()
	if records != len(want) || objects != 0 {
		t.Errorf("view holds %d records and %d objects, want %d records and no object", records, objects, len(want))
	}
}

func sortByKey(objs []any) {
	slices.SortFunc(objs, func(a, b any) int { return strings.Compare(keyOf(a), keyOf(b)) })
}

// TestEncodedStoreSharedReads: with SharedReads a repeated Get returns the hot
// cache's object itself, equal to client-go's; after the server changes the
// object, Get returns the new version, and the object a reader held stays as
// it was read.
func TestEncodedStoreSharedReads(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 4)
	f, inf := encodedPods(t, srv.Config, "typed", leanstore.WithNamespace(ns), leanstore.WithStripLastApplied(),
		leanstore.WithEncodedStore(leanstore.EncodedStore{SharedReads: true}))
	defer f.Shutdown()
	ref := referencePods(t, "typed", ns)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	f.StartWithContext(runCtx)
	runInformers(t, runCtx, ref)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, ref.HasSynced) {
		t.Fatal("the informers did not sync")
	}
	sameObjects(t, ref.GetStore(), inf.GetStore())
	key := inf.GetStore().ListKeys()[0]
	get := func() *corev1.Pod {
		obj, ok, err := inf.GetStore().GetByKey(key)
		if err != nil || !ok {
			t.Fatalf("GetByKey(%s): exists %v, %v", key, ok, err)
		}
		return obj.(*corev1.Pod)
	}
	first := get()
	if get() != first {
		t.Fatal("a repeated Get returned another object: the hot cache's object is not shared")
	}
	if hits := leanstore.Unwrap(inf).Status().Encoded.HotHits; hits == 0 {
		t.Error("no hot-cache hit counted")
	}
	held := first.DeepCopy()

	_, name, _ := cache.SplitMetaNamespaceKey(key)
	if _, err := srv.Clientset().CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"changed":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	want := serverState(t, ctx, ns)
	waitFor(t, ctx, "the encoded store to converge", func() bool { return maps.Equal(cacheState(inf), want) })
	waitFor(t, ctx, "client-go to converge", func() bool { return maps.Equal(cacheState(ref), want) })
	if got := get(); got == first || got.Labels["changed"] != "yes" {
		t.Errorf("Get after the change: the old object %v, label %q; want the new version", got == first, got.Labels["changed"])
	}
	if !equality.Semantic.DeepEqual(held, first) {
		t.Error("the object a reader held changed with the update")
	}
	sameObjects(t, ref.GetStore(), inf.GetStore())
}

// TestEncodedStoreRelist: a 410 makes the encoded informers list again
// inside the watch; the store and the handlers converge to the server's
// state, unchanged objects are not decoded (their records match), and the
// view still holds records only.
func TestEncodedStoreRelist(t *testing.T) {
	for _, flavour := range encodedFlavours {
		for _, streaming := range []leanstore.StreamingMode{leanstore.StreamingAuto, leanstore.StreamingOff} {
			t.Run(fmt.Sprintf("%s/streaming-%s", flavour, streaming), func(t *testing.T) {
				testEncodedRelist(t, flavour, streaming)
			})
		}
	}
}

func testEncodedRelist(t *testing.T, flavour string, streaming leanstore.StreamingMode) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 20)
	proxy := startProxy(t)

	f, inf := encodedPods(t, proxy.Config(srv.Config), flavour, leanstore.WithNamespace(ns),
		leanstore.WithStreamingLists(streaming), leanstore.WithPageSize(7), leanstore.WithStripLastApplied())
	defer f.Shutdown()
	view := &handlerView{state: map[string]string{}}
	if _, err := inf.AddEventHandler(view.handler()); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	f.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	waitFor(t, ctx, "the initial adds", func() bool { s, _, _, _, _ := view.snapshot(); return len(s) == 20 })
	view.resetCounts()

	// The watch is cut with a 410 while one Pod changes, one goes and one
	// comes: the re-list must find all three.
	time.Sleep(1100 * time.Millisecond) // client-go faults a watch shorter than a second
	watches := faults.Match{Resource: "pods", Verb: faults.Watch}
	unavailable := proxy.AddRule(faults.Rule{Match: watches, Fault: faults.Status(503, 0)})
	proxy.EndWatches(faults.Match{Resource: "pods"}, faults.Truncate(0))
	waitFor(t, ctx, "a failed watch", func() bool { return proxy.Counts().ByResourceVerb["pods"][faults.Watch] >= 1 })
	pods := srv.Clientset().CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sorted := byName(podPointers(list.Items))
	if err := pods.Delete(ctx, sorted[0].Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	changed := sorted[1].DeepCopy()
	changed.Labels["changed"] = "yes"
	if _, err := pods.Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	extra := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "extra"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := pods.Create(ctx, extra, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer compactPods(t, ctx, srv.Clientset(), proxy)()
	unavailable()

	want := serverState(t, ctx, ns)
	waitFor(t, ctx, "the store to converge after the 410", func() bool { return maps.Equal(cacheState(inf), want) })
	waitFor(t, ctx, "the handler to converge", func() bool { s, _, _, _, _ := view.snapshot(); return maps.Equal(s, want) })
	_, adds, updates, deletes, tomb := view.snapshot()
	if adds != 1 || updates != 1 || deletes != 1 || tomb != 0 {
		t.Errorf("handler saw %d adds, %d updates, %d deletes (%d tombstones): want exactly 1, 1, 1 and no tombstone", adds, updates, deletes, tomb)
	}
	li := leanstore.Unwrap(inf)
	if st := li.Status(); st.Lists != 2 || st.ReusedObjects < 18 {
		t.Errorf("status: %d lists, %d objects reused: want 2 lists and at least 18 reused", st.Lists, st.ReusedObjects)
	}
	obj, ok, _ := inf.GetStore().GetByKey(ns + "/" + changed.Name)
	if !ok || labelsOf(obj)["changed"] != "yes" {
		t.Error("the changed Pod is not up to date in the store")
	}
	if records, objects := li.ViewForTest(); records != len(want) || objects != 0 {
		t.Errorf("view holds %d records and %d objects, want %d records and no object", records, objects, len(want))
	}
}

// TestEncodedStoreInformerContract: what a controller asks of client-go's
// informer, through leanstore over an encoded store: AddIndexers before start
// (and after it, as client-go v0.37 allows), SetTransform and
// SetWatchErrorHandler before start and not after, HasSynced of the informer
// and of each handler registration, and LastSyncResourceVersion.
func TestEncodedStoreInformerContract(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 5)
	f, inf := encodedPods(t, srv.Config, "typed", leanstore.WithNamespace(ns))
	defer f.Shutdown()
	if err := inf.AddIndexers(cache.Indexers{appIndex: byApp}); err != nil {
		t.Fatalf("AddIndexers before start: %v", err)
	}
	if err := inf.SetTransform(func(obj any) (any, error) {
		p := obj.(*corev1.Pod)
		p.Labels = maps.Clone(p.Labels)
		p.Labels["transformed"] = "yes"
		return p, nil
	}); err != nil {
		t.Fatalf("SetTransform before start: %v", err)
	}
	if err := inf.SetWatchErrorHandler(func(*cache.Reflector, error) {}); err != nil {
		t.Fatalf("SetWatchErrorHandler before start: %v", err)
	}
	if inf.HasSynced() || inf.LastSyncResourceVersion() != "" {
		t.Fatal("the informer has synced before it started")
	}
	early, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	f.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, early.HasSynced) {
		t.Fatal("did not sync")
	}
	if inf.LastSyncResourceVersion() == "" {
		t.Error("LastSyncResourceVersion is empty after the sync")
	}
	late := newRecorder()
	reg, err := inf.AddEventHandler(late.handler())
	if err != nil {
		t.Fatal(err)
	}
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		t.Fatal("a handler added after the sync did not sync")
	}
	if adds, _, _ := late.counts(); adds != 5 {
		t.Errorf("a handler added after the sync got %d adds, want the store's 5", adds)
	}
	for _, obj := range inf.GetStore().List() {
		if labelsOf(obj)["transformed"] != "yes" {
			t.Fatalf("%s was not transformed", keyOf(obj))
		}
	}
	if err := inf.SetTransform(nil); err == nil {
		t.Error("SetTransform after start did not fail")
	}
	if err := inf.SetWatchErrorHandler(func(*cache.Reflector, error) {}); err == nil {
		t.Error("SetWatchErrorHandler after start did not fail")
	}
	if err := inf.AddIndexers(cache.Indexers{"late": byApp}); err != nil {
		t.Errorf("AddIndexers after start: %v (client-go v0.37 allows it)", err)
	}
	if got, _ := inf.GetIndexer().ByIndex("late", labelsOf(inf.GetStore().List()[0])["app.kubernetes.io/name"]); len(got) == 0 {
		t.Error("an index added after start finds nothing")
	}
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Error(err)
	}
}

// TestEncodedStoreInvalidCombinations: WithSharing or WithMutationGuard with
// WithEncodedStore is an invalid option, as is a Go type without protobuf:
// the informers do not run, WaitForCacheSync returns false at once, and Err,
// Check and Status say why.
func TestEncodedStoreInvalidCombinations(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, time.Minute)
	ns := srv.NewNamespace(t)
	for name, tc := range map[string]struct {
		opt  leanstore.Option
		want string
	}{
		"sharing":     {leanstore.WithSharing(true), "WithSharing"},
		"guard":       {leanstore.WithMutationGuard(true), "WithMutationGuard"},
		"compression": {leanstore.WithEncodedStore(leanstore.EncodedStore{Compression: 7}), "unknown compression"},
	} {
		t.Run(name, func(t *testing.T) {
			f, inf := encodedPods(t, srv.Config, "typed", leanstore.WithNamespace(ns), tc.opt)
			runCtx, stop := context.WithCancel(ctx)
			f.StartWithContext(runCtx)
			waitCtx, cancelWait := context.WithTimeout(ctx, 2*time.Second)
			synced := f.(*leanstore.TypedFactory).WaitForCacheSync(waitCtx.Done())
			early := waitCtx.Err() == nil
			cancelWait()
			stop()
			f.Shutdown()
			if n, ok := countSynced(synced); n != 1 || ok != 0 || !early {
				t.Errorf("WaitForCacheSync: %d informers, %d synced, returned at once: %v; want 1, 0, true", n, ok, early)
			}
			if err := f.(*leanstore.TypedFactory).Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Err() = %v, want it to name %s", err, tc.want)
			}
			if st := leanstore.Unwrap(inf).Status(); !strings.Contains(st.LastError, tc.want) {
				t.Errorf("Status().LastError = %q, want it to name %s", st.LastError, tc.want)
			}
		})
	}
	rc := kubernetes.NewForConfigOrDie(srv.Config).CoreV1().RESTClient()
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	if _, err := leanstore.NewRESTInformer(rc, gvr, true, &corev1.Pod{}, 0, nil,
		leanstore.WithEncodedStore(leanstore.EncodedStore{}), leanstore.WithSharing(true)); err == nil || !strings.Contains(err.Error(), "WithSharing") {
		t.Errorf("NewRESTInformer with WithEncodedStore and WithSharing: err = %v, want the WithSharing error", err)
	}
}

// TestEncodedStoreResources: EncodedStore.Resources limits the encoded store
// to the informers named; the others keep decoded objects.
func TestEncodedStoreResources(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, time.Minute)
	ns := srv.NewNamespace(t)
	f := leanstore.NewSharedInformerFactory(srv.Clientset(), 0, leanstore.WithNamespace(ns),
		leanstore.WithEncodedStore(leanstore.EncodedStore{Resources: []schema.GroupResource{{Resource: "configmaps"}}}))
	defer f.Shutdown()
	pods := leanstore.Unwrap(f.Core().V1().Pods().Informer())
	cms := leanstore.Unwrap(f.Core().V1().ConfigMaps().Informer())
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	f.StartWithContext(runCtx)
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	if _, ok := pods.EncodedStatsForTest(); ok {
		t.Error("the Pods informer keeps an encoded store; only configmaps were named")
	}
	if _, ok := cms.EncodedStatsForTest(); !ok {
		t.Error("the ConfigMaps informer keeps decoded objects; it was named")
	}
}

// TestEncodedStoreHeap measures the live heap a synced Pods informer holds,
// with the defaults and with the encoded store: the encoded store must hold
// less than half, which it cannot if its view keeps the decoded objects.
func TestEncodedStoreHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 200 Pods")
	}
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	const n = 200
	seedPods(t, ctx, ns, n)
	measure := func(encoded bool) float64 {
		opts := []leanstore.Option{leanstore.WithNamespace(ns), leanstore.WithStripLastApplied()}
		if encoded {
			opts = append(opts, leanstore.WithEncodedStore(leanstore.EncodedStore{HotCacheBytes: -1}))
		}
		before := liveHeapNow()
		f := leanstore.NewSharedInformerFactory(srv.Clientset(), 0, opts...)
		inf := f.Core().V1().Pods().Informer()
		runCtx, stop := context.WithCancel(ctx)
		f.StartWithContext(runCtx)
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatal("did not sync")
		}
		waitFor(t, ctx, "every Pod", func() bool { return len(inf.GetStore().ListKeys()) == n })
		after := liveHeapNow()
		runtime.KeepAlive(inf)
		stop()
		f.Shutdown()
		return float64(after-min(before, after)) / n
	}
	plain := measure(false)
	enc := measure(true)
	t.Logf("live heap per Pod: defaults %.0f B, encoded store %.0f B", plain, enc)
	if enc*2 > plain {
		t.Errorf("the encoded store holds %.0f B a Pod, the defaults %.0f B: want less than half", enc, plain)
	}
}

func liveHeapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
