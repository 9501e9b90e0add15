package reconcile_test

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/reconcile"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// widgetEnv is a namespace with Widgets, a leanstore informer on them, and
// clients, for tests against the real API server.
type widgetEnv struct {
	ns       string
	dyn      dynamic.Interface
	widgets  dynamic.ResourceInterface
	factory  *leanstore.DynamicFactory
	informer cache.SharedIndexInformer
	lister   cache.GenericNamespaceLister
	ctx      context.Context
}

func newWidgetEnv(t *testing.T) *widgetEnv {
	t.Helper()
	needServer(t)
	ns := srv.NewNamespace(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	ctx, cancel := context.WithCancel(context.Background())
	if err := dataset.EnsureWidgetCRD(ctx, dyn); err != nil {
		t.Fatal(err)
	}
	factory := leanstore.NewDynamicSharedInformerFactory(dyn, 0, leanstore.WithNamespace(ns))
	gi := factory.ForResource(dataset.WidgetGVR)
	e := &widgetEnv{
		ns: ns, dyn: dyn, widgets: dyn.Resource(dataset.WidgetGVR).Namespace(ns),
		factory: factory, informer: gi.Informer(), lister: gi.Lister().ByNamespace(ns), ctx: ctx,
	}
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	return e
}

// start starts the factory's informers; call it after the loop's Watch.
func (e *widgetEnv) start() { e.factory.Start(e.ctx.Done()) }

func (e *widgetEnv) create(t *testing.T, name string, size int) {
	t.Helper()
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.cachetune.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": e.ns},
		"spec":     map[string]any{"size": int64(size), "color": "red", "replicas": int64(1)},
	}}
	if _, err := e.widgets.Create(e.ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create widget %s: %v", name, err)
	}
}

// setSpec merge-patches spec.field, which bumps the generation.
func (e *widgetEnv) setSpec(t *testing.T, name, field string, value any) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{%q:%v}}`, field, value)
	if _, err := e.widgets.Patch(e.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch widget %s: %v", name, err)
	}
}

func (e *widgetEnv) get(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	w, err := e.widgets.Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get widget %s: %v", name, err)
	}
	return w
}

// condition returns the status condition of type typ, or nil.
func condition(w *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// cached reads a widget from the informer's cache, the way a reconciler does.
func (e *widgetEnv) cached(key cache.ObjectName) (*unstructured.Unstructured, error) {
	obj, err := e.lister.Get(key.Name)
	if err != nil {
		return nil, err
	}
	return obj.(*unstructured.Unstructured), nil
}

// assemble is a Widget reconciler: a widget needs a positive spec.size
// (otherwise its spec is invalid, a permanent error); a valid one gets
// condition Ready=True for its generation, written only when it changes.
func (e *widgetEnv) assemble(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	w, err := e.cached(req.Key)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size")
	if size < 1 {
		return reconcile.Result{}, failure.Reconcile(failure.InvalidSpec, req.Key.String(),
			fmt.Errorf("spec.size must be positive, got %d", size))
	}
	w = w.DeepCopy()
	if !reconcile.SetCondition(w, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Assembled", ObservedGeneration: w.GetGeneration(),
	}) {
		return reconcile.Result{}, nil
	}
	_, err = e.widgets.UpdateStatus(ctx, w, metav1.UpdateOptions{})
	return reconcile.Result{}, err
}
