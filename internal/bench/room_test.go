package bench

import (
	"strings"
	"testing"
)

// TestProjectRoom checks the scale run's memory projection with the figures
// of a run measured here at 30,000 Pods: the server held 9.3 GiB, client-go's
// stripped typed cache peaked at 2 GiB, leanstore's lean one at 0.2 GiB.
func TestProjectRoom(t *testing.T) {
	gib := func(g float64) uint64 { return uint64(g * (1 << 30)) }
	res := func(mode string, child, server float64) Result {
		return Result{Mode: mode, Objects: 30000,
			Whole: Window{PeakRSS: gib(child), Server: &ServerCost{PeakRSS: gib(server)}}}
	}
	last := []Result{res("client-go/typed-strip-mf-la/stream", 2, 9.3), res("leanstore/typed-lean/stream", 0.2, 9.1)}
	// On a machine of 23.5 GiB with 5 GiB available beside the server: 100,000
	// Pods do not fit.
	r := projectRoom(last, 30000, 100000, gib(5), gib(9.3))
	if ok, why := r.serverFits(); ok || !strings.Contains(why, "the server would need about 31.0 GiB") {
		t.Errorf("100,000 pods fit (%v): %s", ok, why)
	}
	// With room for the server, the small mode fits and the large one not.
	r = projectRoom(last, 30000, 60000, gib(12), gib(9.3))
	if ok, why := r.serverFits(); !ok {
		t.Errorf("the server does not fit: %s", why)
	}
	if ok, _ := r.modeFits("leanstore/typed-lean/stream"); !ok {
		t.Error("leanstore's lean mode at 0.4 GiB does not fit")
	}
	if ok, why := r.modeFits("client-go/typed-strip-mf-la/stream"); ok || !strings.Contains(why, "about 4.0 GiB") {
		t.Errorf("client-go's 4 GiB mode fits (%v): %s", ok, why)
	}
	if ok, _ := r.modeFits("never/measured"); !ok {
		t.Error("a mode without a previous size is left out")
	}
}
