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

	"github.com/go-logr/logr"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/internal/resilience"
	"github.com/cachetune/cachetune/pkg/leanstore"
)

// implementation is an informer under test: build returns its constructor
// with streaming lists on or off, and what to undo after the run.
type implementation struct {
	name  string
	build func(streaming bool, sc resilience.Scenario) (resilience.NewInformer, func())
}

var clientGo = implementation{name: "client-go", build: func(streaming bool, _ resilience.Scenario) (resilience.NewInformer, func()) {
	return resilience.ClientGoConfigMaps, resilience.SetWatchList(streaming)
}}

// tableStallIdle is leanstore's watch idle time-out in the stall scenario of
// the table; the default, 2 minutes, gets a row of its own.
const tableStallIdle = 5 * time.Second

// leanstoreWith is leanstore's typed informer with its defaults (backoff
// 800 ms doubling to 30 s, jitter 1.0, reset on success), streaming lists
// Auto or Off, and idle as the idle time-out in the stall (0: the default).
func leanstoreWith(idle time.Duration) implementation {
	return implementation{name: "leanstore", build: func(streaming bool, sc resilience.Scenario) (resilience.NewInformer, func()) {
		mode := leanstore.StreamingOff
		if streaming {
			mode = leanstore.StreamingAuto
		}
		opts := []leanstore.Option{leanstore.WithStreamingLists(mode), leanstore.WithLogger(logr.Discard())}
		if sc.DuringFault && idle > 0 {
			opts = append(opts, leanstore.WithWatchIdleTimeout(idle))
		}
		return resilience.LeanConfigMaps(opts...), func() {}
	}}
}

// TestTable measures plain client-go and leanstore under every scenario,
// streaming lists on and off, and writes the table of
// docs/errors-and-backoff.md. It runs only with CACHETUNE_RESILIENCE_FAULT
// set; `make resilience` sets 30s (about 40 minutes in all) and writes the
// table to CACHETUNE_RESILIENCE_OUT. pkg/leanstore's resilience tests check
// the same scenarios on leanstore with short faults in every test run.
func TestTable(t *testing.T) {
	if os.Getenv("CACHETUNE_RESILIENCE_FAULT") == "" {
		t.Skip("set CACHETUNE_RESILIENCE_FAULT, e.g. 30s (make resilience)")
	}
	o := options(t)
	// The default backoff may be waiting up to 2 x 30 s when a fault is lifted.
	o.ConvergeWithin = 90 * time.Second
	o.Restricted = srv.RestrictedConfig
	scenarios := append(resilience.Scenarios(300, 1200), resilience.NoGrant())

	type key struct {
		impl, scenario string
		streaming      bool
	}
	results := map[key]resilience.Result{}
	run := func(impl implementation, sc resilience.Scenario, streaming bool, o resilience.Options) {
		t.Run(fmt.Sprintf("%s/%s/streaming=%v", impl.name, sc.Name, streaming), func(t *testing.T) {
			leakcheck.Check(t)
			newInformer, undo := impl.build(streaming, sc)
			r, err := resilience.Run(context.Background(), srv.Config, srv.NewNamespace(t), newInformer, sc, o)
			undo()
			if err != nil {
				t.Fatal(err)
			}
			t.Log(row(sc.Name, streaming, r))
			results[key{impl.name, sc.Name, streaming}] = r
			if impl.name == "leanstore" && !r.Converged {
				t.Errorf("leanstore did not converge: %s", r.Diff)
			}
		})
	}
	for _, impl := range []implementation{clientGo, leanstoreWith(tableStallIdle)} {
		for _, streaming := range []bool{true, false} {
			for _, sc := range scenarios {
				run(impl, sc, streaming, o)
			}
		}
	}
	// The stall once more with leanstore's default idle time-out: the
	// staleness a stalled connection costs out of the box.
	stall := scenarios[slices.IndexFunc(scenarios, func(sc resilience.Scenario) bool { return sc.DuringFault })]
	defaultIdle := o
	defaultIdle.ConvergeWithin = 3 * time.Minute
	stallDefault := stall
	stallDefault.Name = stall.Name + " (default 2 min idle time-out)"
	run(leanstoreWith(0), stallDefault, true, defaultIdle)

	// Recovery as fast as client-go's, with requests bounded during the fault:
	// leanstore converges no later than client-go plus 2 s, or within 5 s
	// where client-go is faster than that, and never sends more than 5
	// requests in a second. The stall with the default idle time-out is
	// measured, not held to it: staying 2 minutes on a stalled connection is
	// the default's documented cost.
	for k, ls := range results {
		if k.impl != "leanstore" || k.scenario == stallDefault.Name {
			continue
		}
		cg, ok := results[key{"client-go", k.scenario, k.streaming}]
		if !ok || !cg.Converged || !ls.Converged {
			continue
		}
		if limit := max(cg.ConvergeSeconds+2, 5); ls.ConvergeSeconds > limit {
			t.Errorf("%s streaming=%v: leanstore converged %.1f s after the fault, client-go %.1f s: want at most %.1f s",
				k.scenario, k.streaming, ls.ConvergeSeconds, cg.ConvergeSeconds, limit)
		}
		if ls.MaxPerSecond > 5 {
			t.Errorf("%s streaming=%v: leanstore sent %d requests in one second during the fault, want at most 5", k.scenario, k.streaming, ls.MaxPerSecond)
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "| scenario | streaming list | client-go: converged | requests | max/s | errors surfaced | leanstore: converged | requests | max/s | errors surfaced |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|\n")
	cells := func(r resilience.Result, ok bool) string {
		if !ok {
			return "| | | | "
		}
		conv := "no"
		if r.Converged {
			conv = fmt.Sprintf("yes, %.1f s", r.ConvergeSeconds)
		}
		return fmt.Sprintf("| %s | %d | %d | %s ", conv, r.Requests, r.MaxPerSecond, surfaced(r))
	}
	for _, streaming := range []bool{true, false} {
		for _, sc := range append(scenarios, stallDefault) {
			cg, cgOK := results[key{"client-go", sc.Name, streaming}]
			ls, lsOK := results[key{"leanstore", sc.Name, streaming}]
			if !cgOK && !lsOK {
				continue
			}
			on := "off"
			if streaming {
				on = "on"
			}
			fmt.Fprintf(&b, "| %s | %s %s%s|\n", sc.Name, on, cells(cg, cgOK), cells(ls, lsOK))
		}
	}
	table := b.String()
	t.Logf("%s faults, 300 ConfigMaps, writer at 20 ops/s; leanstore idle time-out %s in the stall:\n%s", o.FaultFor, tableStallIdle, table)
	if out := os.Getenv("CACHETUNE_RESILIENCE_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// surfaced renders the errors a handler saw by cause, e.g. "Gone 4, Network 3".
func surfaced(r resilience.Result) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.Surfaced)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, r.Surfaced[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
