package leanstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

// TestJSONWatchCutAtItsStartIsResumed cuts a JSON watch stream right after
// it started, before any event. client-go's JSON stream watcher closes a cut
// stream as it closes one that ended cleanly; ended, a watch that lived less
// than a second without an event makes client-go's reflector list everything
// again (a "very short watch"). leanstore must resume the watch inside itself
// instead, as it does for a cut protobuf stream, report the break, and list
// nothing.
func TestJSONWatchCutAtItsStartIsResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against the API server")
	}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for _, kind := range []string{"typed-json", "dynamic"} {
		t.Run(kind, func(t *testing.T) {
			leakcheck.Check(t)
			ctx := testContext(t, time.Minute)
			ns := srv.NewNamespace(t)
			create := func(name string) {
				t.Helper()
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
				if _, err := srv.Clientset().CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 3 {
				create(fmt.Sprintf("cm-%d", i))
			}
			p := startProxy(t)

			opts := []leanstore.Option{leanstore.WithNamespace(ns), leanstore.WithStreamingLists(leanstore.StreamingOff),
				leanstore.WithBackoff(leanstore.Backoff{Initial: 200 * time.Millisecond, Factor: 2, Cap: time.Second}),
				leanstore.WithLogger(logr.Discard())}
			var inf cache.SharedIndexInformer
			var start func(context.Context)
			var shutdown func()
			if kind == "dynamic" {
				f := leanstore.NewDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(p.Config(srv.Config)), 0, opts...)
				inf, start, shutdown = f.ForResource(configMaps).Informer(), f.StartWithContext, f.Shutdown
			} else {
				f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(p.Config(srv.Config)), 0, append(opts, leanstore.WithWireFormat(leanstore.WireJSON))...)
				inf, start, shutdown = f.Core().V1().ConfigMaps().Informer(), f.StartWithContext, f.Shutdown
			}
			var (
				mu   sync.Mutex
				errs []error
			)
			if err := leanstore.Unwrap(inf).SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}); err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			defer shutdown()
			defer stop()
			start(runCtx)
			if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				t.Fatal("informer did not sync")
			}

			// Cut the watch as soon as it is open: it has delivered nothing.
			watches := func() int { return p.Counts().ByResourceVerb["configmaps"][faults.Watch] }
			for watches() == 0 && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			opened := time.Now()
			lists := func() int {
				by := p.Counts().ByResourceVerb["configmaps"]
				return by[faults.List] + by[faults.WatchList]
			}
			before := lists()
			// The proxy counts a watch when the request arrives and holds it
			// as a live stream only once the server's response has begun:
			// under load that can be later, so cut as soon as it is live.
			cut := p.EndWatchesCounted(faults.Match{Resource: "configmaps"}, faults.Cut(0))
			for cut.Fired() == 0 && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
				cut = p.EndWatchesCounted(faults.Match{Resource: "configmaps"}, faults.Cut(0))
			}
			if cut.Fired() != 1 {
				t.Fatalf("cut %d watches, want the informer's one", cut.Fired())
			}
			if d := time.Since(opened); d > 500*time.Millisecond {
				t.Logf("the cut came %s after the watch opened; the reflector calls a watch very short under a second", d)
			}

			// The next write reaches the informer by a watch, not a list.
			create("after-the-cut")
			deadline := time.Now().Add(15 * time.Second)
			for {
				if _, ok, _ := inf.GetStore().GetByKey(ns + "/after-the-cut"); ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the write after the cut did not reach the informer in 15 s")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if n := lists() - before; n != 0 {
				t.Errorf("%d lists after a cut of a watch at its start, want none: the watch is resumed", n)
			}
			mu.Lock()
			defer mu.Unlock()
			var fe *failure.Error
			if len(errs) == 0 || !errors.As(errs[0], &fe) || fe.Reason != failure.WatchFailed {
				t.Errorf("handler got %v, want a WatchFailed for the cut", errs)
			}
		})
	}
}
