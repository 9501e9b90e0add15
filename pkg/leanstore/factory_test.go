package leanstore_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// recorder is an event handler that counts and remembers what it saw.
type recorder struct {
	mu                     sync.Mutex
	adds, updates, deletes map[string]int
}

func newRecorder() *recorder {
	return &recorder{adds: map[string]int{}, updates: map[string]int{}, deletes: map[string]int{}}
}

func keyOf(obj any) string {
	k, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return k
}

func (r *recorder) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.mu.Lock(); r.adds[keyOf(obj)]++; r.mu.Unlock() },
		UpdateFunc: func(_, obj any) { r.mu.Lock(); r.updates[keyOf(obj)]++; r.mu.Unlock() },
		DeleteFunc: func(obj any) { r.mu.Lock(); r.deletes[keyOf(obj)]++; r.mu.Unlock() },
	}
}

func (r *recorder) counts() (adds, updates, deletes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.adds), len(r.updates), len(r.deletes)
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// podProgram is a controller written only against client-go's interfaces: it must
// work unchanged with client-go's factory and with leanstore's.
func podProgram(ctx context.Context, factory informers.SharedInformerFactory, rec *recorder) (func(ns string) ([]*corev1.Pod, error), error) {
	pods := factory.Core().V1().Pods()
	lister := pods.Lister()
	if _, err := pods.Informer().AddEventHandler(rec.handler()); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("%v did not sync", typ)
		}
	}
	return func(ns string) ([]*corev1.Pod, error) { return lister.Pods(ns).List(labels.Everything()) }, nil
}

func seedPods(t *testing.T, ctx context.Context, ns string, n int) {
	t.Helper()
	if err := dataset.Seed(ctx, srv.Config, dataset.Spec{Name: "t", Namespace: ns, Pods: n}); err != nil {
		t.Fatal(err)
	}
}

func byName[T metav1.Object](items []T) []T {
	sort.Slice(items, func(i, j int) bool { return items[i].GetName() < items[j].GetName() })
	return items
}

func TestTypedFactoryIsADropIn(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 30)
	cfg, requests := counted(srv.Config, "pods")
	cs := kubernetes.NewForConfigOrDie(cfg)

	runCtx, stop := context.WithCancel(ctx)
	factory := leanstore.NewSharedInformerFactory(cs, 0, leanstore.WithNamespace(ns))
	defer factory.Shutdown()
	defer stop()
	rec := newRecorder()
	list, err := podProgram(runCtx, factory, rec)
	if err != nil {
		t.Fatal(err)
	}

	cached, err := list(ns)
	if err != nil {
		t.Fatal(err)
	}
	server, err := srv.Clientset().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cached) != 30 || len(server.Items) != 30 {
		t.Fatalf("cached %d pods, server has %d, want 30", len(cached), len(server.Items))
	}
	byName(cached)
	sort.Slice(server.Items, func(i, j int) bool { return server.Items[i].Name < server.Items[j].Name })
	for i, p := range cached {
		if len(p.ManagedFields) != 0 {
			t.Fatalf("cached pod %s still has %d managedFields entries", p.Name, len(p.ManagedFields))
		}
		want := server.Items[i].DeepCopy()
		want.ManagedFields = nil
		if !equality.Semantic.DeepEqual(want, p) {
			t.Fatalf("cached pod %s differs from the server's beyond managedFields", p.Name)
		}
		if p.Annotations[dataset.LastAppliedAnnotation] == "" {
			t.Fatalf("pod %s lost its last-applied annotation, which is kept by default", p.Name)
		}
	}
	if n := requests.count(reqStreamingList); n != 1 {
		t.Errorf("server saw %d streaming lists, want 1", n)
	}
	if n := requests.count(reqList); n != 0 {
		t.Errorf("server saw %d LIST requests, want 0 (streaming list only)", n)
	}

	// Events: one add, one update, one delete.
	pods := srv.Clientset().CoreV1().Pods(ns)
	extra := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "extra"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := pods.Create(ctx, extra, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	target := server.Items[0].Name
	if _, err := pods.Patch(ctx, target, "application/merge-patch+json", []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Grace period 0: the seeded Pods are bound to (fake) nodes, and no kubelet
	// would ever confirm a graceful deletion.
	zero := int64(0)
	if err := pods.Delete(ctx, server.Items[1].Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "add, update and delete events", func() bool {
		a, u, d := rec.counts()
		return a == 31 && u >= 1 && d == 1
	})
	waitFor(t, ctx, "the lister to show the changes", func() bool {
		p, err := factory.Core().V1().Pods().Lister().Pods(ns).Get(target)
		return err == nil && p.Labels["touched"] == "yes" && len(p.ManagedFields) == 0
	})
	st := factory.Status()
	if len(st) != 1 || st[0].ListPath != leanstore.ListPathStreaming || !st[0].Synced || st[0].Wire != "protobuf" {
		t.Errorf("status = %+v, want one synced informer listed by streaming over protobuf", st)
	}
	if err := factory.Check(ctx); err != nil {
		t.Errorf("readiness check failed on a synced factory: %v", err)
	}
}

func TestTypedFactoryMatchesClientGo(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 12)
	runCtx, stop := context.WithCancel(ctx)
	plain := informers.NewSharedInformerFactoryWithOptions(srv.Clientset(), 0, informers.WithNamespace(ns),
		informers.WithTransform(leanstore.Transform(leanstore.WithStripLastApplied())))
	defer plain.Shutdown()
	lean := leanstore.NewSharedInformerFactory(srv.Clientset(), 0, leanstore.WithNamespace(ns), leanstore.WithStripLastApplied(), leanstore.WithInterning(true))
	defer lean.Shutdown()
	defer stop() // runs first: informers stop, then the factories' Shutdown returns

	listPlain, err := podProgram(runCtx, plain, newRecorder())
	if err != nil {
		t.Fatal(err)
	}
	listLean, err := podProgram(runCtx, lean, newRecorder())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := listPlain(ns)
	b, _ := listLean(ns)
	if len(a) != 12 || len(b) != 12 {
		t.Fatalf("client-go cached %d pods, leanstore %d, want 12", len(a), len(b))
	}
	byName(a)
	byName(b)
	for i := range a {
		if !equality.Semantic.DeepEqual(a[i], b[i]) {
			t.Fatalf("pod %s: leanstore's object differs from client-go's with the same stripping", a[i].Name)
		}
		if _, ok := b[i].Annotations[dataset.LastAppliedAnnotation]; ok {
			t.Fatalf("pod %s kept the last-applied annotation", b[i].Name)
		}
	}
}

func TestDynamicFactory(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	if err := dataset.Seed(ctx, srv.Config, dataset.Spec{Name: "t", Namespace: ns, Widgets: 8}); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	runCtx, stop := context.WithCancel(ctx)
	factory := leanstore.NewDynamicSharedInformerFactory(dyn, 0, leanstore.WithNamespace(ns), leanstore.WithStripLastApplied(),
		leanstore.WithPrune(dataset.WidgetGVR.GroupResource(), func(obj runtime.Object) error {
			unstructured.RemoveNestedField(obj.(*unstructured.Unstructured).Object, "spec", "parts")
			return nil
		}))
	defer factory.Shutdown()
	defer stop()
	gi := factory.ForResource(dataset.WidgetGVR)
	rec := newRecorder()
	if _, err := gi.Informer().AddEventHandler(rec.handler()); err != nil {
		t.Fatal(err)
	}
	factory.Start(runCtx.Done())
	for gvr, ok := range factory.WaitForCacheSync(runCtx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", gvr)
		}
	}
	objs, err := gi.Lister().ByNamespace(ns).List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 8 {
		t.Fatalf("cached %d widgets, want 8", len(objs))
	}
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		if u.GetManagedFields() != nil || u.GetAnnotations()[dataset.LastAppliedAnnotation] != "" {
			t.Fatalf("widget %s not stripped", u.GetName())
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "parts"); found {
			t.Fatalf("widget %s: spec.parts not pruned", u.GetName())
		}
		if color, _, _ := unstructured.NestedString(u.Object, "spec", "color"); color == "" {
			t.Fatalf("widget %s lost spec.color, which no option prunes", u.GetName())
		}
	}
	if err := dyn.Resource(dataset.WidgetGVR).Namespace(ns).Delete(ctx, "widget-00003", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the delete event", func() bool { _, _, d := rec.counts(); return d == 1 })
}

func TestMetadataFactory(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 10)
	runCtx, stop := context.WithCancel(ctx)
	factory := leanstore.NewMetadataSharedInformerFactory(metadata.NewForConfigOrDie(srv.Config), 0,
		leanstore.WithNamespace(ns), leanstore.WithStripLastApplied())
	defer factory.Shutdown()
	defer stop()
	gi := factory.ForResource(dataset.PodsGVR)
	factory.Start(runCtx.Done())
	factory.WaitForCacheSync(runCtx.Done())
	objs, err := gi.Lister().ByNamespace(ns).List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 10 {
		t.Fatalf("cached %d pods' metadata, want 10", len(objs))
	}
	for _, o := range objs {
		m := o.(*metav1.PartialObjectMetadata)
		if m.ManagedFields != nil || m.Annotations[dataset.LastAppliedAnnotation] != "" {
			t.Fatalf("metadata of %s not stripped", m.Name)
		}
		if m.Labels[dataset.LabelDataset] != "t" || len(m.OwnerReferences) != 1 {
			t.Fatalf("metadata of %s lost labels or owner references", m.Name)
		}
	}
}
