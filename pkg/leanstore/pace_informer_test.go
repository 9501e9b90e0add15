package leanstore_test

import (
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/leanstore"
)

// TestHeapBoundReportsAndRespectsTheProcess lists Pods through a leanstore
// informer twice: with the process's GC settings untouched, the list's forced
// collections are counted in Status and in forced_gcs_total; with the GC
// percentage set by the program (debug.SetGCPercent, restored afterwards), the
// list forces none and Status says why.
func TestHeapBoundReportsAndRespectsTheProcess(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 60)
	list := func(t *testing.T) (leanstore.Status, float64) {
		reg := prometheus.NewRegistry()
		runCtx, stop := context.WithCancel(ctx)
		f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(srv.Config), 0, leanstore.WithNamespace(ns), leanstore.WithMetrics(reg))
		defer func() { stop(); f.Shutdown() }()
		inf := leanstore.Unwrap(f.Core().V1().Pods().Informer())
		f.StartWithContext(runCtx)
		if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
			t.Fatal("informer did not sync")
		}
		return inf.Status(), counterValue(t, reg, "cachetune_leanstore_forced_gcs_total")
	}
	t.Run("process left GC alone", func(t *testing.T) {
		// A collection of the runtime's own, due from the garbage earlier
		// tests left, could take the list's garbage before the list ends
		// and leave finish nothing to collect: start a fresh cycle.
		runtime.GC()
		st, counted := list(t)
		if st.HeapBoundOff != "" {
			t.Skipf("the test process chose its GC policy: %s", st.HeapBoundOff)
		}
		// The list ends with a collection of its garbage (60 Pods of 20 KB
		// decoded), before client-go stores them.
		if st.ForcedGCs < 1 || float64(st.ForcedGCs) != counted {
			t.Errorf("status counts %d forced collections, forced_gcs_total %v; want at least 1, equal", st.ForcedGCs, counted)
		}
	})
	t.Run("SetGCPercent", func(t *testing.T) {
		defer debug.SetGCPercent(debug.SetGCPercent(200))
		runtime.GC()
		st, counted := list(t)
		if st.ForcedGCs != 0 || counted != 0 || !strings.Contains(st.HeapBoundOff, "SetGCPercent") {
			t.Errorf("status: %d forced (counter %v), heap bound off %q; want none, and SetGCPercent as the reason", st.ForcedGCs, counted, st.HeapBoundOff)
		}
	})
}
