package leanstore_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/leanstore"
)

// The drop-in contract: controllerProgram is written only against client-go's
// interfaces. TestDropInContract runs it unchanged on client-go's three
// factories and on leanstore's, side by side on the same server and the same
// writes, and requires the same objects (apart from the managedFields leanstore
// strips) and the same events.

// factories are the three factories a controller builds, as client-go's
// interfaces.
type factories struct {
	typed    informers.SharedInformerFactory
	dynamic  dynamicinformer.DynamicSharedInformerFactory
	metadata metadatainformer.SharedInformerFactory
}

var (
	podsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// transcript is what a controller program saw: every handler call in order per
// informer and key, and the watch errors its handler chained on.
type transcript struct {
	mu          sync.Mutex
	events      map[string][]string // "informer key" -> ["ADDED rv", ...]
	watchErrors int
}

func (tr *transcript) record(informer, verb string, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
		verb += "(tombstone)"
	}
	m, err := metaOf(obj)
	if err != nil {
		verb, m = "BAD "+err.Error(), &metav1.ObjectMeta{}
	}
	k := informer + " " + m.GetNamespace() + "/" + m.GetName()
	tr.mu.Lock()
	tr.events[k] = append(tr.events[k], verb+" "+m.GetResourceVersion())
	tr.mu.Unlock()
}

func (tr *transcript) handler(informer string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { tr.record(informer, "ADDED", obj) },
		UpdateFunc: func(_, obj any) { tr.record(informer, "MODIFIED", obj) },
		DeleteFunc: func(obj any) { tr.record(informer, "DELETED", obj) },
	}
}

func (tr *transcript) snapshot() map[string][]string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := make(map[string][]string, len(tr.events))
	for k, v := range tr.events {
		out[k] = slices.Clone(v)
	}
	return out
}

// programView reads the program's caches: each lister's keys and
// resourceVersions, and what the custom index finds.
type programView func() map[string]string

// controllerProgram builds a controller's caches the way client-go's users do,
// through the factories' interfaces only, starts them and waits for their sync.
func controllerProgram(ctx context.Context, f factories, ns string, tr *transcript) (programView, error) {
	// Typed Pods with a custom index and a handler registered with options.
	pods := f.typed.Core().V1().Pods()
	if err := pods.Informer().AddIndexers(cache.Indexers{"byNode": func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}}); err != nil {
		return nil, err
	}
	if _, err := pods.Informer().AddEventHandlerWithOptions(tr.handler("pods"), cache.HandlerOptions{}); err != nil {
		return nil, err
	}
	if err := pods.Informer().SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		tr.mu.Lock()
		tr.watchErrors++
		tr.mu.Unlock()
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}); err != nil {
		return nil, err
	}
	// A filtered informer of ConfigMaps through InformerFor: only app=web.
	cms := f.typed.InformerFor(&corev1.ConfigMap{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredConfigMapInformer(c, ns, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			func(o *metav1.ListOptions) { o.LabelSelector = "app=web" })
	})
	if _, err := cms.AddEventHandler(tr.handler("configmaps app=web")); err != nil {
		return nil, err
	}
	// Deployments through ForResource.
	deploys, err := f.typed.ForResource(deploymentsGVR)
	if err != nil {
		return nil, err
	}
	if _, err := deploys.Informer().AddEventHandler(tr.handler("deployments")); err != nil {
		return nil, err
	}
	// All ConfigMaps as unstructured, and Pods' metadata only.
	dynCMs := f.dynamic.ForResource(configMapsGVR)
	if _, err := dynCMs.Informer().AddEventHandler(tr.handler("dynamic configmaps")); err != nil {
		return nil, err
	}
	metaPods := f.metadata.ForResource(podsGVR)
	if _, err := metaPods.Informer().AddEventHandler(tr.handler("metadata pods")); err != nil {
		return nil, err
	}

	f.typed.Start(ctx.Done())
	f.dynamic.Start(ctx.Done())
	f.metadata.Start(ctx.Done())
	for _, synced := range []func() bool{
		func() bool { return allTrue(f.typed.WaitForCacheSync(ctx.Done())) },
		func() bool { return allTrue(f.dynamic.WaitForCacheSync(ctx.Done())) },
		func() bool { return allTrue(f.metadata.WaitForCacheSync(ctx.Done())) },
		func() bool { return cache.WaitForCacheSync(ctx.Done(), cms.HasSynced, deploys.Informer().HasSynced) },
	} {
		if !synced() {
			return nil, fmt.Errorf("caches did not sync: %w", ctx.Err())
		}
	}

	podLister, cmLister, deployLister := pods.Lister(), cms.GetIndexer(), deploys.Lister()
	return func() map[string]string {
		view := map[string]string{}
		add := func(prefix string, objs []runtime.Object) {
			for _, o := range objs {
				m, _ := metaOf(o)
				view[prefix+" "+m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
			}
		}
		ps, _ := podLister.Pods(ns).List(labels.Everything())
		for _, p := range ps {
			view["pods "+p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
		for _, o := range cmLister.List() {
			add("configmaps app=web", []runtime.Object{o.(runtime.Object)})
		}
		ds, _ := deployLister.ByNamespace(ns).List(labels.Everything())
		add("deployments", ds)
		us, _ := dynCMs.Lister().ByNamespace(ns).List(labels.Everything())
		add("dynamic configmaps", us)
		ms, _ := metaPods.Lister().ByNamespace(ns).List(labels.Everything())
		add("metadata pods", ms)
		for _, node := range []string{"node-a", "node-b"} {
			byNode, _ := pods.Informer().GetIndexer().ByIndex("byNode", node)
			view["index byNode "+node] = fmt.Sprint(len(byNode))
		}
		return view
	}, nil
}

func allTrue[K comparable](m map[K]bool) bool {
	for _, ok := range m {
		if !ok {
			return false
		}
	}
	return true
}

func TestDropInContract(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	cs := srv.Clientset()
	write := newDropInWriter(t, ctx, cs, ns)
	write.initial()

	cfg := srv.Config
	runCtx, stop := context.WithCancel(ctx)
	clientGo := factories{
		typed:    informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(cfg), 0, informers.WithNamespace(ns)),
		dynamic:  dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(cfg), 0, ns, nil),
		metadata: metadatainformer.NewFilteredSharedInformerFactory(metadata.NewForConfigOrDie(cfg), 0, ns, nil),
	}
	lean := factories{
		typed:    leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(cfg), 0, leanstore.WithNamespace(ns)),
		dynamic:  leanstore.NewDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(cfg), 0, leanstore.WithNamespace(ns)),
		metadata: leanstore.NewMetadataSharedInformerFactory(metadata.NewForConfigOrDie(cfg), 0, leanstore.WithNamespace(ns)),
	}
	defer func() {
		stop() // Shutdown waits for the informers, which stop with runCtx
		for _, f := range []factories{clientGo, lean} {
			f.typed.Shutdown()
			f.dynamic.Shutdown()
			f.metadata.Shutdown()
		}
	}()
	cgTr := &transcript{events: map[string][]string{}}
	lsTr := &transcript{events: map[string][]string{}}
	cgView, err := controllerProgram(runCtx, clientGo, ns, cgTr)
	if err != nil {
		t.Fatalf("client-go: %v", err)
	}
	lsView, err := controllerProgram(runCtx, lean, ns, lsTr)
	if err != nil {
		t.Fatalf("leanstore: %v", err)
	}
	if got, want := lsView(), cgView(); !maps.Equal(got, want) {
		t.Fatalf("after the sync, leanstore's caches differ from client-go's:\n%s", diffViews(want, got))
	}

	write.changes()
	want := write.expected()
	waitFor(t, ctx, "client-go's caches to converge", func() bool { return maps.Equal(cgView(), want) })
	waitFor(t, ctx, "leanstore's caches to converge", func() bool { return maps.Equal(lsView(), want) })
	// Handlers run after the store is updated: wait for the last events.
	waitFor(t, ctx, "the same events", func() bool { return sameEvents(cgTr.snapshot(), lsTr.snapshot()) })
	cgEv, lsEv := cgTr.snapshot(), lsTr.snapshot()
	if !sameEvents(cgEv, lsEv) {
		t.Errorf("events differ:\n%s", diffEvents(cgEv, lsEv))
	}
	for _, k := range []string{"pods " + ns + "/p-0", "configmaps app=web " + ns + "/web-1", "dynamic configmaps " + ns + "/other-0", "metadata pods " + ns + "/p-2", "deployments " + ns + "/d-0"} {
		if len(lsEv[k]) < 2 {
			t.Errorf("%s: events %v, want its add and its changes", k, lsEv[k])
		}
	}

	// The same objects: the typed Pods equal client-go's apart from managedFields.
	cgPods, _ := clientGo.typed.Core().V1().Pods().Lister().Pods(ns).List(labels.Everything())
	lsPods, _ := lean.typed.Core().V1().Pods().Lister().Pods(ns).List(labels.Everything())
	if len(cgPods) != len(lsPods) {
		t.Fatalf("client-go lists %d pods, leanstore %d", len(cgPods), len(lsPods))
	}
	byName(cgPods)
	byName(lsPods)
	for i := range cgPods {
		want := cgPods[i].DeepCopy()
		want.ManagedFields = nil
		if !equalPods(want, lsPods[i]) {
			t.Errorf("pod %s differs beyond managedFields", want.Name)
		}
	}
	if cgTr.watchErrors != 0 || lsTr.watchErrors != 0 {
		t.Errorf("watch errors without faults: client-go %d, leanstore %d", cgTr.watchErrors, lsTr.watchErrors)
	}
}

func equalPods(a, b *corev1.Pod) bool { return equality.Semantic.DeepEqual(a, b) }

func sameEvents(a, b map[string][]string) bool {
	return maps.EqualFunc(a, b, slices.Equal[[]string])
}

func diffEvents(a, b map[string][]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if !slices.Equal(a[k], b[k]) {
			out = append(out, fmt.Sprintf("%s: client-go %v, leanstore %v", k, a[k], b[k]))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%s: only leanstore %v", k, b[k]))
		}
	}
	return strings.Join(out, "\n")
}

func diffViews(want, got map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			out = append(out, fmt.Sprintf("%s: want %q, got %q", k, want[k], got[k]))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s: extra %q", k, got[k]))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// dropInWriter makes the writes of TestDropInContract and computes, from a
// fresh consistent list, what each program's view must show.
type dropInWriter struct {
	t   *testing.T
	ctx context.Context
	cs  kubernetes.Interface
	ns  string
}

func newDropInWriter(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string) *dropInWriter {
	return &dropInWriter{t: t, ctx: ctx, cs: cs, ns: ns}
}

func (w *dropInWriter) must(_ any, err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *dropInWriter) pod(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
}

func (w *dropInWriter) cm(name, app string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}}, Data: map[string]string{"k": name}}
}

// initial writes what exists before the programs start.
func (w *dropInWriter) initial() {
	for i := range 4 {
		w.must(w.cs.CoreV1().Pods(w.ns).Create(w.ctx, w.pod(fmt.Sprintf("p-%d", i), []string{"node-a", "node-b"}[i%2]), metav1.CreateOptions{}))
	}
	for i := range 3 {
		w.must(w.cs.CoreV1().ConfigMaps(w.ns).Create(w.ctx, w.cm(fmt.Sprintf("web-%d", i), "web"), metav1.CreateOptions{}))
		w.must(w.cs.CoreV1().ConfigMaps(w.ns).Create(w.ctx, w.cm(fmt.Sprintf("other-%d", i), "other"), metav1.CreateOptions{}))
	}
	w.must(w.cs.AppsV1().Deployments(w.ns).Create(w.ctx, deployment("d-0"), metav1.CreateOptions{}))
}

// changes updates, patches, relabels and deletes while both programs watch.
func (w *dropInWriter) changes() {
	pods, cms := w.cs.CoreV1().Pods(w.ns), w.cs.CoreV1().ConfigMaps(w.ns)
	w.must(pods.Patch(w.ctx, "p-0", types.MergePatchType, []byte(`{"metadata":{"labels":{"changed":"yes"}}}`), metav1.PatchOptions{}))
	w.must(pods.Patch(w.ctx, "p-2", types.MergePatchType, []byte(`{"metadata":{"annotations":{"a":"b"}}}`), metav1.PatchOptions{}))
	w.must(nil, pods.Delete(w.ctx, "p-1", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
	w.must(pods.Create(w.ctx, w.pod("p-4", "node-b"), metav1.CreateOptions{}))
	w.must(cms.Patch(w.ctx, "web-1", types.MergePatchType, []byte(`{"data":{"k":"changed"}}`), metav1.PatchOptions{}))
	w.must(cms.Patch(w.ctx, "other-0", types.MergePatchType, []byte(`{"data":{"k":"changed"}}`), metav1.PatchOptions{}))
	// Leaves the label selector: a delete for the filtered informer.
	w.must(cms.Patch(w.ctx, "web-2", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"gone"}}}`), metav1.PatchOptions{}))
	w.must(nil, cms.Delete(w.ctx, "web-0", metav1.DeleteOptions{}))
	w.must(w.cs.AppsV1().Deployments(w.ns).Patch(w.ctx, "d-0", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}))
}

// expected is what every program view must show, from fresh consistent lists.
func (w *dropInWriter) expected() map[string]string {
	w.t.Helper()
	view := map[string]string{}
	pods, err := w.cs.CoreV1().Pods(w.ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	nodes := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue // p-1's grace period is 0: gone in a moment
		}
		view["pods "+w.ns+"/"+p.Name] = p.ResourceVersion
		view["metadata pods "+w.ns+"/"+p.Name] = p.ResourceVersion
		nodes[p.Spec.NodeName]++
	}
	for _, node := range []string{"node-a", "node-b"} {
		view["index byNode "+node] = fmt.Sprint(nodes[node])
	}
	cms, err := w.cs.CoreV1().ConfigMaps(w.ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, c := range cms.Items {
		view["dynamic configmaps "+w.ns+"/"+c.Name] = c.ResourceVersion
		if c.Labels["app"] == "web" {
			view["configmaps app=web "+w.ns+"/"+c.Name] = c.ResourceVersion
		}
	}
	ds, err := w.cs.AppsV1().Deployments(w.ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, d := range ds.Items {
		view["deployments "+w.ns+"/"+d.Name] = d.ResourceVersion
	}
	return view
}

func deployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
}
