package resilience_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/internal/resilience"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

var srv *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.Main(m, apiserver.Options{}, &srv))
}

// options reads the durations from the environment, so that the same test
// gives the short run for CI and the long one for the docs:
//
//	CACHETUNE_RESILIENCE_FAULT=30s go test -run TestClientGoTable -v ./internal/resilience
func options(t *testing.T) resilience.Options {
	o := resilience.Options{FaultFor: 5 * time.Second, ConvergeWithin: 30 * time.Second}
	if v := os.Getenv("CACHETUNE_RESILIENCE_FAULT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("CACHETUNE_RESILIENCE_FAULT: %v", err)
		}
		o.FaultFor = d
	}
	return o
}

func TestNoFaultConverges(t *testing.T) {
	leakcheck.Check(t)
	o := options(t)
	o.Objects, o.FaultFor = 50, 2*time.Second
	none := resilience.Scenario{Name: "none", Start: func(p *faults.Proxy, _ string) func() { return func() {} }}
	r, err := resilience.Run(context.Background(), srv.Config, srv.NewNamespace(t), resilience.ClientGoConfigMaps, none, o)
	if err != nil {
		t.Fatal(err)
	}
	// Without a fault the watch keeps the store current: it converges within
	// ConvergeWithin (30 s, the harness's give-up, ample on a loaded
	// machine), and a harness whose comparison were wrong would never.
	if !r.Converged {
		t.Errorf("no fault: did not converge within %s (%s)", o.ConvergeWithin, r.Diff)
	}
	if r.SurfacedTotal() != 0 {
		t.Errorf("errors surfaced without a fault: %v", r.Surfaced)
	}
	// The writer writes, without errors: about 80 operations in its 4 s on
	// a quiet machine, as many as the server answers on a loaded one.
	if w := r.Writes["create"] + r.Writes["update"] + r.Writes["delete"]; w == 0 || r.WriteErrors > 0 {
		t.Errorf("writer did %v with %d errors, want operations and none failed", r.Writes, r.WriteErrors)
	}
}

// TestClientGoTable measures plain client-go under every scenario, streaming
// lists on and off, and prints the table. It asserts what client-go is known
// to do: every scenario but the stall converges once the fault is lifted.
func TestClientGoTable(t *testing.T) {
	if testing.Short() {
		t.Skip("18 runs of about 10 s")
	}
	leakcheck.Check(t)
	o := options(t)
	var rows []string
	for _, watchList := range []bool{true, false} {
		for _, sc := range resilience.Scenarios(300, 1200) {
			name := fmt.Sprintf("%s/watchlist=%v", sc.Name, watchList)
			t.Run(name, func(t *testing.T) {
				restore := resilience.SetWatchList(watchList)
				r, err := resilience.Run(context.Background(), srv.Config, srv.NewNamespace(t), resilience.ClientGoConfigMaps, sc, o)
				restore()
				if err != nil {
					t.Fatal(err)
				}
				rows = append(rows, row(sc.Name, watchList, r))
				if !sc.DuringFault && !r.Converged {
					t.Errorf("did not converge after the fault: %s", r.Diff)
				}
			})
		}
	}
	t.Logf("plain client-go v0.37.2, %s faults, 300 ConfigMaps, writer at 20 ops/s:\n%s\n%s",
		o.FaultFor, "| scenario | streaming list | converged | seconds | requests during fault (by verb) | max/s | errors surfaced (by cause) |\n|---|---|---|---|---|---|---|", strings.Join(rows, "\n"))
}

func row(scenario string, watchList bool, r resilience.Result) string {
	on := "off"
	if watchList {
		on = "on"
	}
	conv := "no"
	secs := "-"
	if r.Converged {
		conv, secs = "yes", fmt.Sprintf("%.1f", r.ConvergeSeconds)
	}
	var surfaced []string
	for _, k := range slices.Sorted(maps.Keys(r.Surfaced)) {
		surfaced = append(surfaced, fmt.Sprintf("%s %d", k, r.Surfaced[k]))
	}
	s := strings.Join(surfaced, ", ")
	if s == "" {
		s = "none"
	}
	var verbs []string
	for _, v := range slices.Sorted(maps.Keys(r.ByVerb)) {
		verbs = append(verbs, fmt.Sprintf("%s %d", v, r.ByVerb[v]))
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %d (%s) | %d | %s |", scenario, on, conv, secs, r.Requests, strings.Join(verbs, ", "), r.MaxPerSecond, s)
}
