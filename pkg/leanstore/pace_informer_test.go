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
		// The heap bound goes on watching the heap for a moment after the
		// sync (while the informer takes the list in), so a collection may
		// come between the two reads: read until they agree.
		var st leanstore.Status
		var counted float64
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			st, counted = inf.Status(), counterValue(t, reg, "cachetune_leanstore_forced_gcs_total")
			if float64(st.ForcedGCs) == counted || time.Now().After(end) {
				return st, counted
			}
		}
	}
	t.Run("process left GC alone", func(t *testing.T) {
		// The list ends with a collection of its garbage (60 Pods of 20 KB
		// decoded), before client-go stores them. A collection of the
		// runtime's own (due from the garbage of tests running in
		// parallel) can take that garbage just before the list ends and
		// leave finish nothing to collect, so a list may force none. Under
		// load three lists in a row have each met one (a make test run with
		// two CPU-bound processes beside it); ten in a row would be a list
		// that never forces. Every list's count must agree between Status
		// and the counter.
		const lists = 10
		forced := false
		for attempt := 1; attempt <= lists && !forced; attempt++ {
			runtime.GC() // a fresh cycle: the list's garbage is what finish finds
			st, counted := list(t)
			if st.HeapBoundOff != "" {
				t.Skipf("the test process chose its GC policy: %s", st.HeapBoundOff)
			}
			if float64(st.ForcedGCs) != counted {
				t.Errorf("list %d: status counts %d forced collections, forced_gcs_total %v; want equal", attempt, st.ForcedGCs, counted)
			}
			forced = st.ForcedGCs >= 1
		}
		if !forced {
			t.Errorf("%d lists forced no collection; want the list's garbage collected before client-go stores it", lists)
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
