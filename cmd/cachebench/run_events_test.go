package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/internal/bench/report"
	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

func TestRunEventsFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--events", "100,x"}, `--events takes write rates per second above 0, got "x"`},
		{[]string{"run", "--events", "0"}, "--events takes write rates per second above 0"},
		{[]string{"run", "--events", "100", "--event-step", "0s"}, "--event-step must be positive"},
		{[]string{"run", "--events", "100", "--resources", "configmaps", "--configmaps", "5"}, "--events writes Pods: --resources must include pods"},
		{[]string{"run", "--kubeconfig", "k", "--events", "100"}, "--events writes to the cluster"},
		{[]string{"run", "--sample-every", "0s"}, "must be positive"},
	} {
		code, _, stderr := cachebench(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	o, _, err := parseRunFlags([]string{"--events", "100, 1000", "--event-step", "5s", "--pods", "300", "--sample-every", "1ms", "--relists", "0"}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if e := o.Plan.Events; e == nil || len(e.Rates) != 2 || e.Rates[1] != 1000 || e.Step.D() != 5*time.Second || e.Objects != 30 || o.Plan.SampleEvery.D() != time.Millisecond || o.Plan.Relists != 0 {
		t.Errorf("plan %+v, events %+v", o.Plan, o.Plan.Events)
	}
}

// TestRunEvents runs the events phase alone (no re-lists) against the local
// server, 300 Pods, two modes in their own processes, two short steps, and
// checks that every write reached each mode's handler and that the table and
// the HTML report show the phase.
func TestRunEvents(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver")
	}
	leakcheck.Check(t)
	out := t.TempDir()
	jsonPath, htmlPath := filepath.Join(out, "cachebench.json"), filepath.Join(out, "cachebench.html")
	code, stdout, stderr := cachebench(t, "run",
		"--kubeconfig", kubeconfigFor(t, apiserver.AdminUser, ""), "--seed", "--pods", "300", "--server-pid", fmt.Sprint(srv.PID),
		"--modes", "client-go/typed/stream,leanstore/metadata-lean/stream", "--relists", "0", "--events", "20,100", "--event-step", "2s",
		"--idle", "200ms", "--settle", "300ms", "--out-dir", out, "--cpu-profiles", filepath.Join(out, "prof"))
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("stderr:\n%s\nstdout:\n%s", stderr, stdout)
	f, err := os.Open(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	r, err := bench.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != 2 {
		t.Fatalf("%d results, want 2", len(r.Results))
	}
	measured := 0 // steps whose CPU per event is above zero
	for _, res := range r.Results {
		ev := res.Events
		if res.Error != "" || ev == nil || ev.Error != "" || ev.Objects != 30 || len(ev.Steps) != 2 {
			t.Fatalf("%s: error %q, events phase %+v", res.Mode, res.Error, ev)
		}
		if ev.IdleCPUPerSecond <= 0 || ev.LiveHeapBefore == 0 {
			t.Errorf("%s: idle CPU %v s/s, live heap %d before the steps", res.Mode, ev.IdleCPUPerSecond, ev.LiveHeapBefore)
		}
		for _, st := range ev.Steps {
			w := st.Writes
			if st.Error != "" || st.Lost != 0 || w.Failed != 0 || w.Total() == 0 || st.Matched != w.Total() {
				t.Errorf("%s step %d: error %q, %d lost, writes %+v, matched %d", res.Mode, st.Index, st.Error, st.Lost, w, st.Matched)
			}
			if w.Status == 0 || w.Labels == 0 || (w.Total() >= 10 && (w.Created == 0 || w.Deleted == 0)) {
				t.Errorf("%s step %d: writes %+v, want every kind", res.Mode, st.Index, w)
			}
			// Only the rate achieved is reported as a rate: never above the one asked.
			if st.AchievedRate <= 0 || st.AchievedRate > st.Rate*1.05+1 {
				t.Errorf("%s step %d: achieved %.1f/s for %v asked", res.Mode, st.Index, st.AchievedRate, st.Rate)
			}
			if st.Latency.Count != st.Matched || st.Latency.P50 <= 0 || st.Latency.Max < st.Latency.P99 || st.Latency.Max > 60_000 {
				t.Errorf("%s step %d: latency %+v", res.Mode, st.Index, st.Latency)
			}
			if d := st.Delivered; d.Adds+d.Updates+d.Deletes < w.Total() || d.Deletes != w.Deleted {
				t.Errorf("%s step %d: delivered %+v for writes %+v", res.Mode, st.Index, d, w)
			}
			// CPU per event is the window's CPU beyond the idle rate, so a cheap
			// mode's can be 0 on a loaded machine (the idle window ran a
			// collection); it never exceeds the window's CPU, and some step of
			// the run measures more than nothing.
			d := st.Delivered
			if events := d.Adds + d.Updates + d.Deletes; st.Window.CPUSeconds <= 0 || st.CPUPerEvent < 0 ||
				st.CPUPerEvent*float64(events) > st.Window.CPUSeconds*1e6*1.001 {
				t.Errorf("%s step %d: %.0f µs CPU per event for %d events, %.4f s CPU in the window", res.Mode, st.Index, st.CPUPerEvent, events, st.Window.CPUSeconds)
			}
			if st.CPUPerEvent > 0 {
				measured++
			}
			if s := st.Window.Server; s == nil || s.CPUSeconds <= 0 || st.Window.Sampling.Samples == 0 || st.LiveHeapAfter == 0 {
				t.Errorf("%s step %d: window %+v, server %+v", res.Mode, st.Index, st.Window, s)
			}
		}
	}
	if measured == 0 {
		t.Error("no step of either mode measured any CPU per event")
	}
	for _, want := range []string{"writes/s asked", "writes/s achieved", "p99 ms", "CPU µs/event"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the table does not show %q", want)
		}
	}
	// A CPU profile of each mode's sync and one of its event steps.
	for _, mode := range []string{"client-go_typed_stream", "leanstore_metadata-lean_stream"} {
		for _, part := range []string{"sync", "events"} {
			p := filepath.Join(out, "prof", mode+".pods."+part+".pprof")
			if st, err := os.Stat(p); err != nil || st.Size() == 0 {
				t.Errorf("CPU profile %s: %v (want a profile)", filepath.Base(p), err)
			}
		}
	}
	html, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Delivery latency against write rate", "CPU per event against write rate"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the HTML report has no %q", want)
		}
	}
	// The writer's Pods are gone with the seeded namespace.
	pods, err := srv.Clientset().CoreV1().Pods(r.Datasets[0].Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("after the run: %v, %d pods left", err, len(pods.Items))
	}
}

// TestBenchEventsModes: make bench-events names its modes one by one, in the
// order it runs them (--mode-order given), so a leanstore mode added later is
// not in it by a glob: every streaming leanstore mode and every client-go
// cache it compares with must be listed, once.
func TestBenchEventsModes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var list string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "BENCH_EVENTS_MODES ?= "); ok {
			list = v
		}
	}
	if list == "" {
		t.Fatal("the Makefile sets no BENCH_EVENTS_MODES")
	}
	given, err := bench.SelectAsGiven(list)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Split(list, ",")); n != len(given) {
		t.Errorf("BENCH_EVENTS_MODES names %d modes, %d distinct: each once, by its name", n, len(given))
	}
	listed := map[string]bool{}
	for _, m := range given {
		listed[m.Name] = true
	}
	want := []string{"client-go/typed/stream", "client-go/typed-strip-mf-la/stream", "client-go/metadata/stream", "client-go/metadata-strip-mf/stream"}
	for _, m := range bench.Modes() {
		if strings.HasPrefix(m.Name, "leanstore/") && strings.HasSuffix(m.Name, "/stream") {
			want = append(want, m.Name)
		}
	}
	for _, name := range want {
		if !listed[name] {
			t.Errorf("BENCH_EVENTS_MODES leaves out %s", name)
		}
	}
}

// TestBenchSyncModes checks make bench-sync's list of modes: each a mode,
// named once, and with client-go's cache of its kind among them, which the
// summary's ratios need.
func TestBenchSyncModes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var list string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "BENCH_SYNC_MODES  ?= "); ok {
			list = v
		}
	}
	if list == "" {
		t.Fatal("the Makefile sets no BENCH_SYNC_MODES")
	}
	given, err := bench.SelectAsGiven(list)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Split(list, ",")); n != len(given) {
		t.Errorf("BENCH_SYNC_MODES names %d modes, %d distinct: each once, by its name", n, len(given))
	}
	listed := map[string]bool{}
	for _, m := range given {
		listed[m.Name] = true
	}
	for _, m := range given {
		if base := report.KindBaseline(m.Name); !listed[base] {
			t.Errorf("BENCH_SYNC_MODES has %s without %s, which its ratios are to", m.Name, base)
		}
	}
}
