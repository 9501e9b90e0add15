package leanstore_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

// leanFactory is what the re-list tests need of a leanstore factory.
type leanFactory interface {
	StartWithContext(context.Context)
	Shutdown()
	Status() []leanstore.Status
}

// startLean builds one pods informer of the given flavour against cfg.
func startLean(t *testing.T, ctx context.Context, cfg *rest.Config, flavour string, opts ...leanstore.Option) (leanFactory, *leanstore.Informer) {
	t.Helper()
	var f leanFactory
	var inf *leanstore.Informer
	switch flavour {
	case "typed":
		tf := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(cfg), 0, opts...)
		inf = leanstore.Unwrap(tf.Core().V1().Pods().Informer())
		f = tf
	case "metadata":
		mf := leanstore.NewMetadataSharedInformerFactory(metadata.NewForConfigOrDie(cfg), 0, opts...)
		inf = mf.ForResource(dataset.PodsGVR).Informer().(*leanstore.Informer)
		f = mf
	}
	f.StartWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	return f, inf
}

// serverState is the namespace's pods as a fresh list sees them: key -> RV.
// compactPods makes the proxy act as a server that compacted its history now:
// every watch of Pods from the current resourceVersion or older expires (410),
// as a real compaction makes them, while a list and the watch from its newer
// resourceVersion work. A one-shot 410 would not force a list: a watch from the
// same resourceVersion that then works shows nothing was missed, and
// leanstore takes it instead of listing (see TestExpiryHealedWithoutList).
func compactPods(t *testing.T, ctx context.Context, cs kubernetes.Interface, proxy *faults.Proxy) func() {
	t.Helper()
	l, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	rv, err := strconv.ParseUint(l.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	remove := proxy.AddRule(faults.Rule{Match: faults.Match{Resource: "pods", Verb: faults.Watch, ResourceVersionAtMost: rv}, Fault: faults.Gone()})
	// A write elsewhere moves the server past the compaction, so that the
	// next list's resourceVersion, and the watch from it, are newer.
	cms := cs.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "compaction-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	return remove
}

func serverState(t *testing.T, ctx context.Context, ns string) map[string]string {
	t.Helper()
	list, err := srv.Clientset().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		out[ns+"/"+p.Name] = p.ResourceVersion
	}
	return out
}

func cacheState(inf cache.SharedIndexInformer) map[string]string {
	out := map[string]string{}
	for _, obj := range inf.GetStore().List() {
		m := obj.(metav1.Object)
		out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
	}
	return out
}

func sameState(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestRelistKeepsUnchangedObjects forces re-lists with a 410 Gone on the watch,
// through the fault proxy, and checks that every path (streaming and LIST, typed
// and metadata-only) keeps the cached object for each unchanged object instead
// of storing a second copy, and converges to the server's state.
func TestRelistKeepsUnchangedObjects(t *testing.T) {
	for _, flavour := range []string{"typed", "metadata"} {
		for _, streaming := range []leanstore.StreamingMode{leanstore.StreamingAuto, leanstore.StreamingOff} {
			t.Run(fmt.Sprintf("%s/streaming-%s", flavour, streaming), func(t *testing.T) {
				testRelist(t, flavour, streaming)
			})
		}
	}
}

func testRelist(t *testing.T, flavour string, streaming leanstore.StreamingMode) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 40)
	proxy := startProxy(t)

	runCtx, stop := context.WithCancel(ctx)
	f, inf := startLean(t, runCtx, proxy.Config(srv.Config), flavour,
		leanstore.WithNamespace(ns), leanstore.WithStreamingLists(streaming), leanstore.WithPageSize(15), leanstore.WithStripLastApplied())
	defer f.Shutdown()
	defer stop()

	before := map[string]runtime.Object{}
	for _, obj := range inf.GetStore().List() {
		before[keyOf(obj)] = obj.(runtime.Object)
	}
	// One pod changes between the lists: it must be replaced, the rest kept.
	changed := "t"
	pods := srv.Clientset().CoreV1().Pods(ns)
	for _, obj := range before {
		changed = obj.(metav1.Object).GetName()
		break
	}
	proxy.ResetCounts()
	defer compactPods(t, ctx, srv.Clientset(), proxy)()
	// The watch after a paged list may not be live at the proxy yet (it holds
	// a stream once the server's response has begun): end it once it is.
	n := 0
	for n == 0 && ctx.Err() == nil {
		n = proxy.EndWatches(faults.Match{Resource: "pods", Verb: faults.Watch}, faults.Gone())
		n += proxy.EndWatches(faults.Match{Resource: "pods", Verb: faults.WatchList}, faults.Gone())
		if n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if n != 1 {
		t.Fatalf("ended %d watches, want 1", n)
	}
	if _, err := pods.Patch(ctx, changed, types.MergePatchType, []byte(`{"metadata":{"labels":{"changed":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the re-list", func() bool { return inf.Status().Lists == 2 })
	waitFor(t, ctx, "convergence to the server's state", func() bool { return sameState(serverState(t, ctx, ns), cacheState(inf)) })

	st := inf.Status()
	counts := proxy.Counts().ByResourceVerb["pods"]
	wantPath := leanstore.ListPathStreaming
	if streaming == leanstore.StreamingOff {
		wantPath = leanstore.ListPathPaged
		if counts[faults.List] < 3 || counts[faults.WatchList] != 0 {
			t.Errorf("server saw %v, want paged LISTs (40 pods, 15 a page) and no streaming list", counts)
		}
	} else if counts[faults.WatchList] != 1 || counts[faults.List] != 0 {
		t.Errorf("server saw %v, want one streaming list and no LIST", counts)
	}
	if st.ListPath != wantPath {
		t.Errorf("list path %q, want %q", st.ListPath, wantPath)
	}
	kept := 0
	for _, obj := range inf.GetStore().List() {
		if old, ok := before[keyOf(obj)]; ok && old == obj.(runtime.Object) {
			kept++
		}
	}
	// The changed pod may have reached the cache through the watch before the
	// re-list (then the re-list keeps it too) or through the re-list.
	if kept < 39 || st.ReusedObjects < 39 {
		t.Errorf("re-list kept %d of 40 cached objects (status says %d reused), want at least 39", kept, st.ReusedObjects)
	}
	obj, ok, _ := inf.GetStore().GetByKey(ns + "/" + changed)
	if !ok || obj.(metav1.Object).GetLabels()["changed"] != "yes" {
		t.Errorf("the changed pod is not up to date in the cache")
	}
	if m := obj.(metav1.Object); m.GetManagedFields() != nil || m.GetAnnotations()[dataset.LastAppliedAnnotation] != "" {
		t.Errorf("the re-listed object is not stripped")
	}
}

// TestStreamingRefusalIsRemembered runs a server with WatchList off: the first
// informer's streaming list is refused and it lists with LIST; the factory
// remembers, so neither a second informer nor a re-list asks again.
func TestStreamingRefusalIsRemembered(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second server")
	}
	leakcheck.Check(t)
	ctx := testContext(t, 3*time.Minute)
	old, err := apiserver.Start(ctx, apiserver.Options{ExtraArgs: []string{"--feature-gates=WatchList=false"}})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Stop()
	ns := "default"
	if err := dataset.Seed(ctx, old.Config, dataset.Spec{Name: "t", Namespace: ns, Pods: 5, ConfigMaps: 3}); err != nil {
		t.Fatal(err)
	}
	proxy, err := faults.Start(old.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()

	for _, mode := range []leanstore.StreamingMode{leanstore.StreamingAuto, leanstore.StreamingOn} {
		t.Run(mode.String(), func(t *testing.T) {
			proxy.ResetCounts()
			runCtx, stop := context.WithCancel(ctx)
			f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(proxy.Config(old.Config)), 0,
				leanstore.WithNamespace(ns), leanstore.WithStreamingLists(mode))
			defer f.Shutdown()
			defer stop()
			pods := leanstore.Unwrap(f.Core().V1().Pods().Informer())
			f.StartWithContext(runCtx)
			cache.WaitForCacheSync(runCtx.Done(), pods.HasSynced)
			cms := leanstore.Unwrap(f.Core().V1().ConfigMaps().Informer())
			f.StartWithContext(runCtx)
			cache.WaitForCacheSync(runCtx.Done(), cms.HasSynced)

			uncompact := compactPods(t, ctx, kubernetes.NewForConfigOrDie(old.Config), proxy)
			proxy.EndWatches(faults.Match{Resource: "pods", Verb: faults.Watch}, faults.Gone())
			waitFor(t, ctx, "the re-list", func() bool { return pods.Status().Lists == 2 })
			uncompact()

			c := proxy.Counts().ByResourceVerb
			want := map[leanstore.StreamingMode][2]int{ // streaming attempts on pods, on configmaps
				leanstore.StreamingAuto: {1, 0},
				leanstore.StreamingOn:   {2, 1},
			}[mode]
			if c["pods"][faults.WatchList] != want[0] || c["configmaps"][faults.WatchList] != want[1] {
				t.Errorf("streaming attempts: pods %d, configmaps %d; want %d and %d", c["pods"][faults.WatchList], c["configmaps"][faults.WatchList], want[0], want[1])
			}
			if c["pods"][faults.List] != 2 || c["configmaps"][faults.List] != 1 {
				t.Errorf("LISTs: pods %d, configmaps %d; want 2 and 1", c["pods"][faults.List], c["configmaps"][faults.List])
			}
			for _, inf := range []*leanstore.Informer{pods, cms} {
				st := inf.Status()
				if st.ListPath != leanstore.ListPathPaged || st.ListPathReason == "" || st.ConsecutiveFailures != 0 {
					t.Errorf("%s: path %q (%s), %d failures; want a LIST with the refusal as reason and no failure", st.Informer, st.ListPath, st.ListPathReason, st.ConsecutiveFailures)
				}
			}
			if len(cacheState(pods)) != 5 || len(cms.GetStore().List()) != 3 {
				t.Errorf("cached %d pods and %d configmaps, want 5 and 3", len(cacheState(pods)), len(cms.GetStore().List()))
			}
		})
	}
}

// TestStreamingListExpiredFromLatest makes every streaming list expire (410)
// and ends the live watch with a 410, so that the informer lists again from
// the latest resourceVersion: a streaming list from there that expires says
// that the server (or a proxy) expires the stream itself, and the list goes
// on with a paged LIST at once, with no second streaming list after a
// backoff. Its Status says why.
func TestStreamingListExpiredFromLatest(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 5)
	proxy := startProxy(t)
	runCtx, stop := context.WithCancel(ctx)
	f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(proxy.Config(srv.Config)), 0,
		leanstore.WithNamespace(ns), leanstore.WithLogger(logr.Discard()))
	defer f.Shutdown()
	defer stop()
	pods := leanstore.Unwrap(f.Core().V1().Pods().Informer())
	f.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), pods.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if st := pods.Status(); st.ListPath != leanstore.ListPathStreaming {
		t.Fatalf("first list by %q (%s), want a streaming list", st.ListPath, st.ListPathReason)
	}

	// Watches expire too, so that no watch from the last resourceVersion
	// spares the list (a probe's, see TestExpiryHealedWithoutList).
	defer proxy.AddRule(faults.Rule{Match: faults.Match{Resource: "pods", Verb: faults.WatchList}, Fault: faults.Gone()})()
	liftWatches := proxy.AddRule(faults.Rule{Match: faults.Match{Resource: "pods", Verb: faults.Watch}, Fault: faults.Gone()})
	defer liftWatches()
	proxy.ResetCounts()
	// The live watch is the first streaming list's stream.
	if n := proxy.EndWatches(faults.Match{Resource: "pods"}, faults.Gone()); n != 1 {
		t.Fatalf("ended %d watches, want the one live", n)
	}
	waitFor(t, ctx, "the re-list", func() bool { return pods.Status().Lists == 2 })
	c := proxy.Counts().ByResourceVerb["pods"]
	liftWatches()
	t.Logf("requests during the re-list: %v", c)

	if c[faults.WatchList] != 1 || c[faults.List] != 1 {
		t.Errorf("the re-list made %d streaming lists and %d LISTs, want 1 and 1", c[faults.WatchList], c[faults.List])
	}
	st := pods.Status()
	if st.ListPath != leanstore.ListPathPaged || !strings.Contains(st.ListPathReason, "expired") {
		t.Errorf("re-list by %q (%s), want a LIST with the expiry as reason", st.ListPath, st.ListPathReason)
	}
	if !sameState(cacheState(pods), serverState(t, ctx, ns)) {
		t.Errorf("cache %v, server %v", cacheState(pods), serverState(t, ctx, ns))
	}
}

// TestExportedTransformsKeepClientGoStreaming checks that leanstore's exported
// transforms are idempotent where it matters: client-go runs a transform twice
// under WatchList and falls back to a LIST when the second run fails. Through a
// counting proxy, a plain client-go informer with them must do one streaming
// list and no LIST.
func TestExportedTransformsKeepClientGoStreaming(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 10)
	proxy := startProxy(t)
	for name, tf := range map[string]cache.TransformFunc{
		"Transform()":                       leanstore.Transform(),
		"Transform(WithStripLastApplied())": leanstore.Transform(leanstore.WithStripLastApplied()),
		"Transform(every option)":           everyStrip(),
	} {
		t.Run(name, func(t *testing.T) {
			proxy.ResetCounts()
			runCtx, stop := context.WithCancel(ctx)
			f := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(proxy.Config(srv.Config)), 0,
				informers.WithNamespace(ns), informers.WithTransform(tf))
			defer f.Shutdown()
			defer stop()
			inf := f.Core().V1().Pods().Informer()
			f.Start(runCtx.Done())
			cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced)
			c := proxy.Counts().ByResourceVerb["pods"]
			if c[faults.WatchList] != 1 || c[faults.List] != 0 {
				t.Fatalf("server saw %v: want one streaming list and no LIST fallback", c)
			}
			for _, obj := range inf.GetStore().List() {
				if len(obj.(*corev1.Pod).ManagedFields) != 0 {
					t.Fatal("managedFields not stripped")
				}
			}
		})
	}
}

// TestStalledWatchesFallBackToList black-holes every watch (but not lists): after
// two stalled watches the informer lists again, so it still converges.
func TestStalledWatchesFallBackToList(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 5)
	proxy := startProxy(t)
	runCtx, stop := context.WithCancel(ctx)
	f, inf := startLean(t, runCtx, proxy.Config(srv.Config), "typed", leanstore.WithNamespace(ns),
		leanstore.WithStreamingLists(leanstore.StreamingOff), leanstore.WithWatchIdleTimeout(time.Second),
		leanstore.WithBackoff(leanstore.Backoff{Initial: 100 * time.Millisecond, Factor: 2, Cap: time.Second}))
	defer f.Shutdown()
	defer stop() // stalled connections end with the informer's context
	remove := proxy.AddRule(faults.Rule{Match: faults.Match{Resource: "pods", Verb: faults.Watch}, Fault: faults.Stall()})
	defer remove()
	proxy.EndWatches(faults.Match{Resource: "pods", Verb: faults.Watch}, faults.Gone())
	waitFor(t, ctx, "the re-list after the 410", func() bool { return inf.Status().Lists == 2 })
	seedPods(t, ctx, ns, 8) // three more pods, which only a list can now bring
	waitFor(t, ctx, "convergence through lists while every watch stalls", func() bool {
		return sameState(serverState(t, ctx, ns), cacheState(inf))
	})
	if st := inf.Status(); st.StalledWatches < 2 || st.Lists < 3 {
		t.Errorf("%d stalled watches reported and %d lists, want at least 2 and 3", st.StalledWatches, st.Lists)
	}
}

// handlerView is what an event handler learns: key -> resourceVersion, built only
// from the events it receives, and the events it received after a point.
type handlerView struct {
	mu                           sync.Mutex
	state                        map[string]string
	adds, updates, deletes, tomb int
}

func (v *handlerView) handler() cache.ResourceEventHandler {
	key := func(obj any) string { k, _ := cache.MetaNamespaceKeyFunc(obj); return k }
	rv := func(obj any) string { m, _ := meta.Accessor(obj); return m.GetResourceVersion() }
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			v.mu.Lock()
			defer v.mu.Unlock()
			v.adds++
			v.state[key(obj)] = rv(obj)
		},
		UpdateFunc: func(_, obj any) {
			v.mu.Lock()
			defer v.mu.Unlock()
			v.updates++
			v.state[key(obj)] = rv(obj)
		},
		DeleteFunc: func(obj any) {
			v.mu.Lock()
			defer v.mu.Unlock()
			v.deletes++
			if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				v.tomb++
			}
			delete(v.state, key(obj))
		},
	}
}

func (v *handlerView) snapshot() (state map[string]string, adds, updates, deletes, tomb int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.state), v.adds, v.updates, v.deletes, v.tomb
}

func (v *handlerView) resetCounts() {
	v.mu.Lock()
	v.adds, v.updates, v.deletes, v.tomb = 0, 0, 0, 0
	v.mu.Unlock()
}

// TestRelistInsideTheWatch: a watch that misses changes and then expires (410)
// lists again and hands the informer only the differences: the handler sees one
// add, one update and one delete (a real DELETED, not a tombstone), the store and
// the handler's view equal the server's, and the server saw exactly one list.
func TestRelistInsideTheWatch(t *testing.T) {
	for _, mode := range []leanstore.StreamingMode{leanstore.StreamingAuto, leanstore.StreamingOff} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			leakcheck.Check(t)
			ctx := testContext(t, time.Minute)
			ns := srv.NewNamespace(t)
			seedPods(t, ctx, ns, 6)
			proxy := startProxy(t)
			runCtx, stop := context.WithCancel(ctx)
			f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(proxy.Config(srv.Config)), 0,
				leanstore.WithNamespace(ns), leanstore.WithStreamingLists(mode))
			defer f.Shutdown()
			defer stop()
			inf := f.Core().V1().Pods().Informer()
			view := &handlerView{state: map[string]string{}}
			if _, err := inf.AddEventHandler(view.handler()); err != nil {
				t.Fatal(err)
			}
			f.Start(runCtx.Done())
			if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
				t.Fatal("informer did not sync")
			}
			waitFor(t, ctx, "the initial adds", func() bool { s, _, _, _, _ := view.snapshot(); return len(s) == 6 })
			view.resetCounts()

			// The watch ends (cleanly, as at the server's time-out) and the
			// next ones fail with 503: none delivers the changes below.
			time.Sleep(1100 * time.Millisecond) // client-go faults a watch shorter than a second
			watches := faults.Match{Resource: "pods", Verb: faults.Watch}
			unavailable := proxy.AddRule(faults.Rule{Match: watches, Fault: faults.Status(503, 0)})
			proxy.ResetCounts()
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
			// The server compacted its history: the next watches, from before
			// the changes, expire at once (410).
			defer compactPods(t, ctx, srv.Clientset(), proxy)()
			unavailable()

			want := serverState(t, ctx, ns)
			waitFor(t, ctx, "the store to converge after the 410", func() bool { return maps.Equal(cacheState(inf), want) })
			waitFor(t, ctx, "the handler to converge", func() bool { s, _, _, _, _ := view.snapshot(); return maps.Equal(s, want) })
			_, adds, updates, deletes, tomb := view.snapshot()
			if adds != 1 || updates != 1 || deletes != 1 || tomb != 0 {
				t.Errorf("handler saw %d adds, %d updates, %d deletes (%d tombstones): want exactly 1, 1, 1 and no tombstone", adds, updates, deletes, tomb)
			}
			c := proxy.Counts().ByResourceVerb["pods"]
			if lists := c[faults.List] + c[faults.WatchList]; lists != 1 {
				t.Errorf("server saw %v: want exactly one list, after the 410", c)
			}
			st := leanstore.Unwrap(inf).Status()
			// The 410, and any probe during the expiry's backoff: a watch from
			// the same resourceVersion, which expires too.
			if st.Lists != 2 || st.FailuresByCause[failure.Gone] < 1 {
				t.Errorf("status: %d lists, %d 410s: want 2 and at least 1 (%+v)", st.Lists, st.FailuresByCause[failure.Gone], st)
			}
		})
	}
}

func podPointers(items []corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// TestExpiryHealedWithoutList: a watch that expires at its start waits out a
// backoff before it lists again; meanwhile a watch from the resourceVersion
// the reflector last got probes the server every second. When a probe works,
// nothing was missed (the server still has that point of its history): it
// becomes the watch, delivers the changes made meanwhile, and no list is
// needed. A probe that expires too is reported like the 410 before it.
func TestExpiryHealedWithoutList(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 4)
	proxy := startProxy(t)
	// The first watch, right after the list, and the first probe expire; the
	// expiry's backoff is 6 s, so only a probe can end it sooner.
	proxy.AddRule(faults.Rule{Match: faults.Match{Resource: "pods", Verb: faults.Watch}, Fault: faults.Gone(), Count: 2})
	var log failureLog
	runCtx, stop := context.WithCancel(ctx)
	f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(proxy.Config(srv.Config)), 0,
		leanstore.WithNamespace(ns), leanstore.WithStreamingLists(leanstore.StreamingOff),
		leanstore.WithBackoff(leanstore.Backoff{Initial: 6 * time.Second, Factor: 2, Cap: 6 * time.Second, ResetAfter: time.Minute}),
		leanstore.WithLogger(funcr.NewJSON(log.write, funcr.Options{})))
	defer f.Shutdown()
	defer stop()
	inf := leanstore.Unwrap(f.Core().V1().Pods().Informer())
	view := &handlerView{state: map[string]string{}}
	if _, err := inf.AddEventHandler(view.handler()); err != nil {
		t.Fatal(err)
	}
	f.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	waitFor(t, ctx, "the first watch to expire", func() bool { return inf.Status().FailuresByCause[failure.Gone] >= 1 })
	pods := srv.Clientset().CoreV1().Pods(ns)
	extra := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "extra"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := pods.Create(ctx, extra, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	want := serverState(t, ctx, ns)
	waitFor(t, ctx, "the store to converge", func() bool { return maps.Equal(cacheState(inf), want) })
	waitFor(t, ctx, "the handler to converge", func() bool { s, _, _, _, _ := view.snapshot(); return maps.Equal(s, want) })
	if c := proxy.Counts().ByResourceVerb["pods"]; c[faults.List] != 1 {
		t.Errorf("server saw %v: want only the initial list", c)
	}
	st := inf.Status()
	if st.Lists != 1 || st.FailuresByCause[failure.Gone] != 2 {
		t.Errorf("status: %d lists, %d 410s: want 1 and 2, the watch's and the first probe's (%+v)", st.Lists, st.FailuresByCause[failure.Gone], st)
	}
	probes := 0
	for _, lf := range log.since(0) {
		if lf.Probe {
			probes++
		}
	}
	if probes != 1 {
		t.Errorf("%d failed probes logged, want 1: %+v", probes, log.since(0))
	}
}
