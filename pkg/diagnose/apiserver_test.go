package diagnose_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

var srv *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.Main(m, apiserver.Options{}, &srv))
}

func needServer(t *testing.T) {
	t.Helper()
	if srv == nil {
		t.Skip("needs the local kube-apiserver (not started with -short)")
	}
}

// slowClient is a dynamic client limited to qps requests per second: test
// controllers that write on every event must not saturate the shared server.
func slowClient(qps float32) dynamic.Interface {
	cfg := rest.CopyConfig(srv.Config)
	cfg.QPS, cfg.Burst = qps, int(qps)
	return dynamic.NewForConfigOrDie(cfg)
}

// widgetInformer starts a dynamic informer on the namespace's Widgets, runs
// register on it before it starts, and returns it synced with a stop function.
func widgetInformer(ctx context.Context, t *testing.T, ns string, register func(cache.SharedIndexInformer)) (cache.SharedIndexInformer, func()) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	if err := dataset.EnsureWidgetCRD(ctx, dyn); err != nil {
		t.Fatal(err)
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	inf := f.ForResource(dataset.WidgetGVR).Informer()
	register(inf)
	stop := make(chan struct{})
	f.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("widget informer did not sync")
	}
	return inf, func() { close(stop); f.Shutdown() }
}

func createWidget(ctx context.Context, t *testing.T, ns, name string) {
	t.Helper()
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.cachetune.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"size": int64(1), "color": "red"},
	}}
	if _, err := dynamic.NewForConfigOrDie(srv.Config).Resource(dataset.WidgetGVR).Namespace(ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// controller runs reconcile for the named object once per burst of events,
// in its own goroutine, like a workqueue worker, until stop is called.
type controller struct {
	kick   chan struct{}
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// startController registers on inf and reconciles the object ns/name with the
// latest copy from the informer's store.
func startController(ctx context.Context, t *testing.T, inf cache.SharedIndexInformer, ns, name string, reconcile func(context.Context, *unstructured.Unstructured)) *controller {
	t.Helper()
	c := &controller{kick: make(chan struct{}, 1)}
	poke := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GetName() == name {
			select {
			case c.kick <- struct{}{}:
			default:
			}
		}
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, n any) { poke(n) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, c.cancel = context.WithCancel(ctx)
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		defer func() { _ = inf.RemoveEventHandler(reg) }()
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.kick:
			}
			obj, exists, err := inf.GetStore().GetByKey(ns + "/" + name)
			if err != nil || !exists {
				continue
			}
			reconcile(ctx, obj.(*unstructured.Unstructured))
		}
	}()
	poke(&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": name}}})
	return c
}

func (c *controller) stop() {
	c.cancel()
	c.done.Wait()
}

// waitFor polls cond every 100 ms until it holds or limit passes, and returns
// how long it took.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}
