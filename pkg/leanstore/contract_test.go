package leanstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

// The tests of this file each prove one contract that leanstore broke before
// (issues 13 and 14): each failed before its fix.

// handlerLog records what watch-error handlers were given.
type handlerLog struct {
	mu         sync.Mutex
	reasons    []failure.Reason
	nilReflect int
}

func (l *handlerLog) handle(ctx context.Context, r *cache.Reflector, err error) {
	// The common wrapper: count, then hand on to client-go's default handler,
	// which dereferences the reflector.
	cache.DefaultWatchErrorHandler(ctx, r, err)
	l.mu.Lock()
	defer l.mu.Unlock()
	if r == nil {
		l.nilReflect++
	}
	var fe *failure.Error
	if errors.As(err, &fe) {
		l.reasons = append(l.reasons, fe.Reason)
	}
}

func (l *handlerLog) saw(r failure.Reason) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, got := range l.reasons {
		if got == r {
			return true
		}
	}
	return false
}

// TestNoInitialEventsEndFallsBackAndIsRemembered runs against a server that
// never ends a streaming list's initial events (a proxy drops the bookmark, as
// aggregated API servers do, kubernetes/kubernetes#140890): the informer waits
// a bounded time, lists with LIST, reports the missing bookmark with its own
// reason, and with StreamingAuto does not ask again at the next re-list.
func TestNoInitialEventsEndFallsBackAndIsRemembered(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 5)
	proxy := startProxy(t)
	proxy.AddRule(faults.Rule{Match: faults.Match{Resource: "pods", Verb: faults.WatchList}, Fault: faults.DropInitialEventsEnd()})

	runCtx, stop := context.WithCancel(ctx)
	f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(proxy.Config(srv.Config)), 0,
		leanstore.WithNamespace(ns), leanstore.WithWatchIdleTimeout(3*time.Second))
	defer f.Shutdown()
	defer stop()
	inf := leanstore.Unwrap(f.Core().V1().Pods().Informer())
	log := &handlerLog{}
	if err := inf.SetWatchErrorHandlerWithContext(log.handle); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	f.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("synced after %s, want within the bounded wait", d)
	}
	st := inf.Status()
	if st.ListPath != leanstore.ListPathPaged || !strings.Contains(st.ListPathReason, "initial-events-end") {
		t.Errorf("list path %q (%q), want a LIST because of the missing initial-events-end bookmark", st.ListPath, st.ListPathReason)
	}
	if !log.saw(failure.InitialEventsEndMissing) {
		t.Errorf("handlers saw %v, want %s", log.reasons, failure.InitialEventsEndMissing)
	}
	if log.nilReflect != 0 {
		t.Errorf("handlers got a nil reflector %d times", log.nilReflect)
	}

	// A re-list after a 410 lists with LIST at once: the refusal is remembered.
	proxy.ResetCounts()
	proxy.EndWatches(faults.Match{Resource: "pods"}, faults.Gone())
	waitFor(t, ctx, "the re-list", func() bool { return inf.Status().Lists >= 2 })
	if c := proxy.Counts().ByResourceVerb["pods"]; c[faults.WatchList] != 0 || c[faults.List] == 0 {
		t.Errorf("the re-list sent %v: want LIST only", c)
	}
	waitFor(t, ctx, "convergence", func() bool { return sameState(serverState(t, ctx, ns), cacheState(inf)) })
}

// TestClosedStreamingListIsNotARefusal runs against a proxy that answers JSON
// and then ends streaming lists' bodies early but cleanly, as a proxy that
// cuts long responses does: the stream closes after some objects, without the
// initial-events-end bookmark. That is a failure of the attempt, not a server
// that ignores sendInitialEvents: once the proxy stops cutting, the next
// re-list streams again. (It listed with LIST for good before the fix.)
func TestClosedStreamingListIsNotARefusal(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 10)
	proxy := startProxy(t)
	// JSON first: the informer reads JSON for good, through client-go's
	// watch decoder, which takes a cleanly ended body for a closed stream.
	stopJSON := proxy.AddRule(faults.Rule{Match: faults.Match{Resource: "pods"}, Fault: faults.AnswerJSON()})

	runCtx, stop := context.WithCancel(ctx)
	f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(proxy.Config(srv.Config)), 0,
		leanstore.WithNamespace(ns))
	defer f.Shutdown()
	defer stop()
	inf := leanstore.Unwrap(f.Core().V1().Pods().Informer())
	f.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	stopJSON()

	client := kubernetes.NewForConfigOrDie(srv.Config)
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("a Pod to change: %v", err)
	}
	relist := func(what string, want leanstore.ListPath) {
		t.Helper()
		// A change the watch delivers first: a 410 on a watch that carried
		// events lists at once (one without events waits out a backoff).
		if _, err := client.CoreV1().Pods(ns).Patch(ctx, pods.Items[0].Name, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"touched":"`+strconv.Itoa(inf.Status().Lists)+`"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the change", func() bool { return sameState(serverState(t, ctx, ns), cacheState(inf)) })
		lists := inf.Status().Lists
		proxy.ResetCounts()
		if n := proxy.EndWatches(faults.Match{Resource: "pods"}, faults.Gone()); n == 0 {
			t.Fatalf("%s: no watch to end", what)
		}
		waitFor(t, ctx, what, func() bool { return inf.Status().Lists > lists })
		st := inf.Status()
		c := proxy.Counts().ByResourceVerb["pods"]
		if st.ListPath != want || c[faults.WatchList] == 0 {
			t.Errorf("%s: list path %q (%q) after %v, want %q after streaming lists", what, st.ListPath, st.ListPathReason, c, want)
		}
	}
	stopCutting := proxy.AddRule(faults.Rule{Match: faults.Match{Resource: "pods", Verb: faults.WatchList}, Fault: faults.Truncate(60000)})
	relist("the re-list with cut streams", leanstore.ListPathPaged)
	stopCutting()
	relist("the re-list after the cuts", leanstore.ListPathStreaming)
	waitFor(t, ctx, "convergence", func() bool { return sameState(serverState(t, ctx, ns), cacheState(inf)) })
}

// TestJSONOnlyServer runs typed and metadata-only informers against a server
// that answers JSON to requests for protobuf: they switch to JSON for good,
// say so in Status, and converge.
func TestJSONOnlyServer(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 7)
	proxy := startProxy(t)
	proxy.AddRule(faults.Rule{Match: faults.Match{Resource: "pods"}, Fault: faults.AnswerJSON()})
	for _, flavour := range []string{"typed", "metadata"} {
		for _, mode := range []leanstore.StreamingMode{leanstore.StreamingAuto, leanstore.StreamingOff} {
			t.Run(flavour+"/"+mode.String(), func(t *testing.T) {
				runCtx, stop := context.WithCancel(ctx)
				f, inf := startLean(t, runCtx, proxy.Config(srv.Config), flavour, leanstore.WithNamespace(ns), leanstore.WithStreamingLists(mode))
				defer f.Shutdown()
				defer stop()
				if st := inf.Status(); !strings.HasPrefix(st.Wire, "json") {
					t.Errorf("status wire %q, want json", st.Wire)
				}
				pods := srv.Clientset().CoreV1().Pods(ns)
				if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "json-"},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				waitFor(t, ctx, "convergence", func() bool { return sameState(serverState(t, ctx, ns), cacheState(inf)) })
			})
		}
	}
}

// TestPendingStreamingWatchEndsWithItsContext lists with a streaming list and
// lets the context end before anyone watches: the stream kept for the next
// watch stops with it, leaving no goroutine behind.
func TestPendingStreamingWatchEndsWithItsContext(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 3)
	// Events after the list keep the pending stream's goroutine busy.
	f := leanstore.NewSharedInformerFactory(srv.Clientset(), 0, leanstore.WithNamespace(ns))
	lw := leanstore.Unwrap(f.Core().V1().Pods().Informer()).ListerWatcherForTest()
	listCtx, cancel := context.WithCancel(ctx)
	if _, err := lw.ListWithContext(listCtx, metav1.ListOptions{ResourceVersion: "0"}); err != nil {
		t.Fatal(err)
	}
	pods := srv.Clientset().CoreV1().Pods(ns)
	for i := range 3 {
		if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "late-"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	cancel()
}

// TestInformerForKeepsTheListOfNewFunc asks for a filtered informer, as node
// agents do: one namespace, a field selector, an index of its own. The
// leanstore informer lists and watches exactly that.
func TestInformerForKeepsTheListOfNewFunc(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, time.Minute)
	mine, other := srv.NewNamespace(t), srv.NewNamespace(t)
	pods := func(ns string) {
		for _, node := range []string{"node-1", "node-2"} {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-" + node},
				Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
			if _, err := srv.Clientset().CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	pods(mine)
	pods(other)
	cfg, requests := counted(srv.Config, "pods")
	f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(cfg), 0)
	byNode := cache.Indexers{"byNode": func(obj any) ([]string, error) { return []string{obj.(*corev1.Pod).Spec.NodeName}, nil }}
	inf := f.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(c, mine, resync, byNode, func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName=node-1" })
	})
	runCtx, stop := context.WithCancel(ctx)
	defer f.Shutdown()
	defer stop()
	f.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	keys := inf.GetStore().ListKeys()
	if len(keys) != 1 || keys[0] != mine+"/on-node-1" {
		t.Errorf("cached %v, want only %s/on-node-1", keys, mine)
	}
	if got, err := inf.GetIndexer().ByIndex("byNode", "node-1"); err != nil || len(got) != 1 {
		t.Errorf("byNode index: %d objects, %v", len(got), err)
	}
	if st := leanstore.Unwrap(inf).Status(); st.ListPath == leanstore.ListPathClientGo {
		t.Errorf("fell back to client-go's informer: %s", st.ListPathReason)
	}
	if n := requests.count(reqStreamingList) + requests.count(reqList); n == 0 {
		t.Error("no list request seen")
	}
}

// virtualService is a custom resource's Go type registered in client-go's
// scheme under a group whose first label is a built-in group's.
type virtualService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (v *virtualService) DeepCopyObject() runtime.Object {
	c := *v
	v.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

type virtualServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []virtualService `json:"items"`
}

func (l *virtualServiceList) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = append([]virtualService(nil), l.Items...)
	return &c
}

// listOnly is a ListerWatcher without streaming lists, as fakes are.
type listOnly struct{ *cache.ListWatch }

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

var istioGV = schema.GroupVersion{Group: "networking.istio.io", Version: "v1beta1"}

func init() {
	scheme.Scheme.AddKnownTypes(istioGV, &virtualService{}, &virtualServiceList{})
}

// TestInformerForAForeignGroup asks for the informer of a type of another
// group than the clientset's: leanstore uses newFunc's informer (stripped)
// instead of listing a wrong URL, and Status says why.
func TestInformerForAForeignGroup(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver, which -short does not start")
	}
	leakcheck.Check(t)
	ctx := testContext(t, 30*time.Second)
	f := leanstore.NewSharedInformerFactory(srv.Clientset(), 0)
	listed := make(chan struct{}, 1)
	inf := f.InformerFor(&virtualService{}, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
		lw := &cache.ListWatch{
			ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				select {
				case listed <- struct{}{}:
				default:
				}
				return &virtualServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []virtualService{{ObjectMeta: metav1.ObjectMeta{
					Name: "vs", Namespace: "ns", ResourceVersion: "1",
					ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "istioctl"}}}}}}, nil
			},
			WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
		}
		return cache.NewSharedIndexInformer(listOnly{lw}, &virtualService{}, 0, cache.Indexers{})
	})
	runCtx, stop := context.WithCancel(ctx)
	defer f.Shutdown()
	defer stop()
	f.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
		t.Fatalf("informer did not sync: %+v", leanstore.Unwrap(inf).Status())
	}
	st := leanstore.Unwrap(inf).Status()
	if st.ListPath != leanstore.ListPathClientGo || !strings.Contains(st.ListPathReason, "networking.istio.io/v1beta1") {
		t.Errorf("status %q (%q): want newFunc's informer, saying the group is not the clientset's", st.ListPath, st.ListPathReason)
	}
	obj, ok, _ := inf.GetStore().GetByKey("ns/vs")
	if !ok || obj.(*virtualService).ManagedFields != nil {
		t.Errorf("cached %v (found %v), want the object, stripped", obj, ok)
	}
}

// TestFallbackInformersKeepTheirContract uses a fake clientset, which has no
// REST client: ForResource works instead of panicking, and SetTransform runs
// after leanstore's stripping instead of replacing it.
func TestFallbackInformersKeepTheirContract(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := leanstore.NewSharedInformerFactory(fake.NewClientset(managedPod("p")), 0)
	gi, err := f.ForResource(corev1.SchemeGroupVersion.WithResource("pods"))
	if err != nil {
		t.Fatal(err)
	}
	if err := gi.Informer().SetTransform(func(obj any) (any, error) {
		p := obj.(*corev1.Pod)
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels["seen-by"] = "mine"
		return p, nil
	}); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	obj, ok, _ := gi.Informer().GetStore().GetByKey("shop/p")
	if !ok {
		t.Fatal("pod not cached")
	}
	if p := obj.(*corev1.Pod); p.ManagedFields != nil || p.Labels["seen-by"] != "mine" {
		t.Errorf("managedFields %d, labels %v: want stripped and transformed", len(p.ManagedFields), p.Labels)
	}
	cancel()
	f.Shutdown()
}

// TestStreamingAutoFollowsTheWatchListClientGate turns client-go's
// WatchListClient off, as KUBE_FEATURE_WatchListClient=false does: with
// StreamingAuto, leanstore lists with LIST like client-go and says why.
func TestStreamingAutoFollowsTheWatchListClientGate(t *testing.T) {
	leakcheck.Check(t)
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	ctx := testContext(t, time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 2)
	cfg, requests := counted(srv.Config, "pods")
	runCtx, stop := context.WithCancel(ctx)
	mf := leanstore.NewMetadataSharedInformerFactory(metadata.NewForConfigOrDie(cfg), 0, leanstore.WithNamespace(ns))
	inf := mf.ForResource(dataset.PodsGVR).Informer().(*leanstore.Informer)
	defer mf.Shutdown()
	defer stop()
	mf.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if n := requests.count(reqStreamingList); n != 0 {
		t.Errorf("%d streaming lists with the gate off", n)
	}
	if st := inf.Status(); st.ListPath != leanstore.ListPathPaged || !strings.Contains(st.ListPathReason, "WatchListClient") {
		t.Errorf("list path %q (%q), want LIST because of the gate", st.ListPath, st.ListPathReason)
	}
}

// TestShutdownIsNotAFailure stops informers of every factory: a watch that
// ends because its informer stops is no failure (client-go's stream watcher
// turned the cancelled read into an ERROR event, which was reported).
func TestShutdownIsNotAFailure(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 3)
	for _, flavour := range []string{"typed", "dynamic", "metadata"} {
		t.Run(flavour, func(t *testing.T) {
			runCtx, stop := context.WithCancel(ctx)
			var f leanFactory
			var inf *leanstore.Informer
			switch flavour {
			case "dynamic":
				df := leanstore.NewDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(srv.Config), 0, leanstore.WithNamespace(ns))
				inf = df.ForResource(dataset.PodsGVR).Informer().(*leanstore.Informer)
				df.StartWithContext(runCtx)
				f = df
			default:
				f, inf = startLean(t, runCtx, srv.Config, flavour, leanstore.WithNamespace(ns))
			}
			if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
				t.Fatal("informer did not sync")
			}
			time.Sleep(200 * time.Millisecond) // the watch is open
			stop()
			f.Shutdown()
			if st := inf.Status(); len(st.FailuresByCause) != 0 {
				t.Errorf("stopping reported failures: %v (last %q)", st.FailuresByCause, st.LastError)
			}
		})
	}
}
