package leanstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/leanstore"
)

// An invalid option is an error, never clamped: the factory's informers do not
// list (so they cannot sync with settings they were not given), and Check and
// Status name the option.
func TestInvalidOptionIsAnError(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, time.Minute)
	ns := srv.NewNamespace(t)
	cfg, requests := counted(srv.Config, "pods")
	f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(cfg), 0,
		leanstore.WithNamespace(ns), leanstore.WithPageSize(-5))
	inf := f.Core().V1().Pods().Informer()
	runCtx, stop := context.WithCancel(ctx)
	f.Start(runCtx.Done())
	waitCtx, cancelWait := context.WithTimeout(ctx, 2*time.Second)
	synced := f.WaitForCacheSync(waitCtx.Done())
	cancelWait()
	stop()
	f.Shutdown()

	for typ, ok := range synced {
		if ok {
			t.Errorf("%v synced with an invalid page size", typ)
		}
	}
	if inf.HasSynced() {
		t.Error("the informer synced with an invalid page size")
	}
	if n := requests.count(reqList) + requests.count(reqWatch) + requests.count(reqStreamingList); n != 0 {
		t.Errorf("%d requests sent with an invalid page size, want none", n)
	}
	err := f.Check(ctx)
	if err == nil || !strings.Contains(err.Error(), "WithPageSize") {
		t.Errorf("Check() = %v, want the WithPageSize error", err)
	}
	if st := leanstore.Unwrap(inf).Status(); !strings.Contains(st.LastError, "WithPageSize") {
		t.Errorf("Status().LastError = %q, want the WithPageSize error", st.LastError)
	}

	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	rc := kubernetes.NewForConfigOrDie(srv.Config).CoreV1().RESTClient()
	if _, err := leanstore.NewRESTInformer(rc, gvr, true, &corev1.Pod{}, 0, nil, leanstore.WithPageSize(-5)); err == nil || !strings.Contains(err.Error(), "WithPageSize") {
		t.Errorf("NewRESTInformer with WithPageSize(-5): err = %v, want the WithPageSize error", err)
	}
}

// An invalid option makes WaitForCacheSync return false at once, not when its
// context ends, for each of the three factories; Err, the context variant's
// SyncResult.Err and Status give the reason. The bound is a second: the wait
// must not depend on the context's minute.
func TestInvalidOptionFailsWaitForCacheSyncAtOnce(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, time.Minute)
	ns := srv.NewNamespace(t)
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	opts := []leanstore.Option{leanstore.WithNamespace(ns), leanstore.WithPageSize(-5)}

	type factory interface {
		StartWithContext(context.Context)
		Shutdown()
		Err() error
		Status() []leanstore.Status
	}
	typed := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(srv.Config), 0, opts...)
	dyn := leanstore.NewDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(srv.Config), 0, opts...)
	meta := leanstore.NewMetadataSharedInformerFactory(metadata.NewForConfigOrDie(srv.Config), 0, opts...)
	for _, tc := range []struct {
		name    string
		f       factory
		prepare func()
		wait    func(context.Context) (informers int, synced int)
	}{
		{"typed", typed, func() { typed.Core().V1().Pods().Informer() }, func(ctx context.Context) (int, int) {
			return countSynced(typed.WaitForCacheSync(ctx.Done()))
		}},
		{"dynamic", dyn, func() { dyn.ForResource(pods).Informer() }, func(ctx context.Context) (int, int) {
			return countSynced(dyn.WaitForCacheSync(ctx.Done()))
		}},
		{"metadata", meta, func() { meta.ForResource(pods).Informer() }, func(ctx context.Context) (int, int) {
			return countSynced(meta.WaitForCacheSync(ctx.Done()))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.prepare()
			runCtx, stop := context.WithCancel(ctx)
			defer func() { stop(); tc.f.Shutdown() }()
			tc.f.StartWithContext(runCtx)

			start := time.Now()
			n, synced := tc.wait(ctx)
			if took := time.Since(start); took > time.Second {
				t.Errorf("WaitForCacheSync took %s with an invalid option, want it to return at once", took)
			}
			if n != 1 || synced != 0 {
				t.Errorf("WaitForCacheSync reported %d informers, %d synced; want 1, none synced", n, synced)
			}
			if err := tc.f.Err(); err == nil || !strings.Contains(err.Error(), "WithPageSize") {
				t.Errorf("Err() = %v, want the WithPageSize error", err)
			}
			st := tc.f.Status()
			if len(st) != 1 || !strings.Contains(st[0].LastError, "WithPageSize") {
				t.Errorf("Status() = %+v, want one informer whose LastError names WithPageSize", st)
			}
		})
	}

	start := time.Now()
	res := typed.WaitForCacheSyncWithContext(ctx)
	if took := time.Since(start); took > time.Second {
		t.Errorf("WaitForCacheSyncWithContext took %s with an invalid option", took)
	}
	if res.Err == nil || !strings.Contains(res.Err.Error(), "WithPageSize") {
		t.Errorf("WaitForCacheSyncWithContext().Err = %v, want the WithPageSize error", res.Err)
	}

	valid := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(srv.Config), 0, leanstore.WithNamespace(ns))
	if err := valid.Err(); err != nil {
		t.Errorf("a factory with valid options: Err() = %v, want nil", err)
	}
}

func countSynced[K comparable](m map[K]bool) (n, synced int) {
	for _, ok := range m {
		n++
		if ok {
			synced++
		}
	}
	return n, synced
}

// A metrics registration that fails (two factories of one name on one
// registry) is the second factory's error, not a log line.
func TestMetricsRegistrationFailureIsAnError(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver, which -short does not start")
	}
	reg := prometheus.NewRegistry()
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	first := leanstore.NewSharedInformerFactory(cs, 0, leanstore.WithMetrics(reg))
	if err := first.Check(context.Background()); err != nil {
		t.Fatalf("first factory: Check() = %v", err)
	}
	second := leanstore.NewSharedInformerFactory(cs, 0, leanstore.WithMetrics(reg))
	if err := second.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "WithMetrics") {
		t.Errorf("second factory on the same registry: Check() = %v, want the WithMetrics error", err)
	}
}
