package leanstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

// TestResilienceBrokenStreamAfterStreamingList breaks the stream of a
// streaming list after its initial events, where it goes on as the
// informer's watch. A break there is a watch that broke like any other: it
// must reach the handler as WatchFailed with its cause, and the next watch
// must wait out the backoff rather than follow at once.
func TestResilienceBrokenStreamAfterStreamingList(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against the API server")
	}
	for _, tc := range []struct {
		name  string
		fault faults.Fault
		cause failure.Reason
	}{
		{"cut", faults.Cut(0), failure.Network},
		{"malformed", faults.Malformed(), failure.Decode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leakcheck.Check(t)
			ctx := testContext(t, time.Minute)
			ns := srv.NewNamespace(t)
			for i := range 5 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}
				if _, err := srv.Clientset().CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			p := startProxy(t)

			b := leanstore.Backoff{Initial: time.Second, Factor: 2, Cap: 4 * time.Second}
			f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(p.Config(srv.Config)), 0,
				leanstore.WithNamespace(ns), leanstore.WithBackoff(b), leanstore.WithStreamingLists(leanstore.StreamingOn),
				leanstore.WithLogger(logr.Discard()))
			inf := leanstore.Unwrap(f.Core().V1().ConfigMaps().Informer())
			var (
				mu     sync.Mutex
				errs   []error
				broken = make(chan struct{}, 1)
			)
			if err := inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				select {
				case broken <- struct{}{}:
				default:
				}
			}); err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			defer f.Shutdown()
			defer stop()
			f.StartWithContext(runCtx)
			if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				t.Fatal("informer did not sync")
			}
			if st := inf.Status(); st.ListPath != leanstore.ListPathStreaming {
				t.Fatalf("listed by %q, want a streaming list", st.ListPath)
			}

			// A watch that ends within a second of its start makes the reflector
			// list again; this one has lived longer, so it watches again.
			time.Sleep(1500 * time.Millisecond)
			p.ResetCounts()
			if n := p.EndWatches(faults.Match{Resource: "configmaps"}, tc.fault); n != 1 {
				t.Fatalf("%d live streams, want the streaming list's", n)
			}
			select {
			case <-broken:
			case <-time.After(30 * time.Second):
				t.Errorf("%s of the stream after the streaming list: no error reached the handler in 30 s", tc.fault)
			}
			mu.Lock()
			for _, err := range errs {
				if c := failure.Classify(err); c.Reason != failure.WatchFailed || c.Cause != tc.cause {
					t.Errorf("handler got %s (%v), want WatchFailed caused by %s", c, err, tc.cause)
				}
			}
			mu.Unlock()

			// The next watch waits out the backoff (at least Initial, 1 s).
			time.Sleep(b.Initial / 2)
			if c := p.Counts(); c.Requests != 0 {
				t.Errorf("%d requests (%v) within %s of the break, want none before the backoff's %s", c.Requests, c.ByVerb, b.Initial/2, b.Initial)
			}
		})
	}
}
