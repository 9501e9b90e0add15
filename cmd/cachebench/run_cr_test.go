package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

// TestRunControllerRuntime runs the controller-runtime modes end to end:
// cachebench builds their program from the controllerruntime module and runs
// it as each mode's child, over the same protocol as its own children.
func TestRunControllerRuntime(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver")
	}
	leakcheck.Check(t)
	out := t.TempDir()
	jsonPath := filepath.Join(out, "cachebench.json")
	code, stdout, stderr := cachebench(t, "run",
		"--kubeconfig", kubeconfigFor(t, apiserver.AdminUser, ""), "--seed", "--pods", "200",
		"--modes", "controller-runtime/*", "--relists", "1", "--churn", "0.1",
		"--idle", "300ms", "--settle", "500ms", "--out-dir", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("stderr:\n%s\nstdout:\n%s", stderr, stdout)
	if !strings.Contains(stderr, "building cachebench-cr") {
		t.Error("the run did not say it builds the controller-runtime program")
	}
	f, err := os.Open(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	r, err := bench.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	byMode := map[string]bench.Result{}
	for _, res := range r.Results {
		byMode[strings.TrimPrefix(strings.TrimSuffix(res.Mode, "/stream"), "controller-runtime/")] = res
		if res.Error != "" || res.Objects != 200 {
			t.Errorf("%s: error %q, %d objects; want 200", res.Mode, res.Error, res.Objects)
			continue
		}
		if l := res.ReconcileList; l == nil || l.Error != "" || l.Objects != 200 {
			t.Errorf("%s: reconcile list %+v, want 200 objects read through the manager's client", res.Mode, l)
		}
		if len(res.Relists) != 1 || res.Relists[0].Error != "" || res.Relists[0].Missed() != 0 {
			t.Errorf("%s: re-lists %+v, want one that delivered every change", res.Mode, res.Relists)
		}
	}
	if len(byMode) != 5 {
		t.Fatalf("results of %d modes, want the 5 controller-runtime modes", len(byMode))
	}
	if t.Failed() {
		return
	}
	alloc := func(name string) float64 { return byMode[name].ReconcileList.AllocatedPerObject() }
	perObject := func(name string) float64 { return byMode[name].BytesPerObject }
	// The client deep-copies every Pod it lists (about 23 KB of JSON each),
	// managedFields included unless stripped; with UnsafeDisableDeepCopy it
	// copies only the structs into the list's items.
	if alloc("default") < 10_000 {
		t.Errorf("the default client allocated %.0f bytes per Pod listed: no deep copy?", alloc("default"))
	}
	if alloc("strip-mf") >= alloc("default") {
		t.Errorf("listing stripped Pods allocated %.0f bytes each, not less than unstripped ones (%.0f)", alloc("strip-mf"), alloc("default"))
	}
	if alloc("no-deepcopy") > alloc("default")/4 {
		t.Errorf("UnsafeDisableDeepCopy allocated %.0f bytes per Pod listed, against %.0f with the copy", alloc("no-deepcopy"), alloc("default"))
	}
	// leancache strips last-applied too, and sharing shrinks the cache again.
	if perObject("leancache-strip-mf-la") >= perObject("strip-mf") || perObject("leancache-lean") >= perObject("leancache-strip-mf-la") {
		t.Errorf("live bytes per Pod: strip-mf %.0f, leancache %.0f, leancache with sharing %.0f; want each less than the one before",
			perObject("strip-mf"), perObject("leancache-strip-mf-la"), perObject("leancache-lean"))
	}
}
