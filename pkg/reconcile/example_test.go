package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/reconcile"
)

// A reconcile that meets two 503s is retried with backoff, then succeeds,
// which resets its key.
func ExampleNew() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	loop := reconcile.New("example", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		fmt.Println(req.Key, req.Trigger, "attempt", req.Attempt)
		if req.Attempt < 2 {
			return reconcile.Result{}, apierrors.NewServiceUnavailable("etcd leader changed")
		}
		close(done)
		return reconcile.Result{}, nil
	},
		reconcile.WithBackoff(reconcile.Backoff{Initial: 10 * time.Millisecond, Factor: 2, Cap: time.Second}),
		reconcile.WithLogger(logr.Discard()),
	)
	stopped := make(chan error)
	go func() { stopped <- loop.Run(ctx) }()

	loop.Enqueue(cache.NewObjectName("shop", "widget-1"))
	<-done
	cancel()
	fmt.Println("run:", <-stopped)
	// Output:
	// shop/widget-1 enqueued attempt 0
	// shop/widget-1 retry attempt 1
	// shop/widget-1 retry attempt 2
	// run: <nil>
}

// The usual wiring: a leanstore informer for the objects, the loop watching
// it with the default predicate (spec changes, not status writes), and
// permanent failures recorded as condition Ready=False on the object.
func ExampleLoop_Watch() {
	var cfg *rest.Config // from a kubeconfig or in-cluster
	widgetsGVR := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	dyn := dynamic.NewForConfigOrDie(cfg)
	factory := leanstore.NewDynamicSharedInformerFactory(dyn, 0)
	widgets := factory.ForResource(widgetsGVR)

	loop := reconcile.New("widgets", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		obj, err := widgets.Lister().ByNamespace(req.Key.Namespace).Get(req.Key.Name)
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		if err != nil {
			return reconcile.Result{}, err
		}
		size, _, _ := unstructured.NestedInt64(obj.(*unstructured.Unstructured).Object, "spec", "size")
		if size < 1 {
			// Permanent: parked until the spec changes, and recorded.
			return reconcile.Result{}, failure.Reconcile(failure.InvalidSpec, req.Key.String(), errors.New("spec.size must be positive"))
		}
		// ... make the world match the spec, write status ...
		return reconcile.Result{}, nil
	},
		reconcile.WithWorkers(4),
		reconcile.WithOnPermanent(reconcile.ConditionHook(dyn, widgetsGVR, "Ready")),
		reconcile.WithMetrics(prometheus.DefaultRegisterer),
	)
	if err := loop.Watch(widgets.Informer()); err != nil {
		panic(err)
	}

	ctx := context.Background() // cancelled on SIGTERM in a real controller
	factory.Start(ctx.Done())
	if err := loop.Run(ctx); err != nil {
		panic(err)
	}
}
