package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/cachetune/cachetune/internal/bench"
)

// roundsReport is a run of three rounds of two typed modes and a
// metadata-only pair, with the sync CPU of each round given in µs per object
// (10,000 objects).
func roundsReport(cpu map[string][3]float64) bench.Report {
	r := bench.Report{Plan: bench.DefaultPlan()}
	r.Plan.Rounds = 3
	for round := 1; round <= 3; round++ {
		for _, mode := range []string{"client-go/typed/stream", "leanstore/typed-lean/stream", "client-go/metadata/stream", "leanstore/metadata-lean/stream"} {
			c, ok := cpu[mode]
			if !ok {
				continue
			}
			res := bench.Result{Mode: mode, Title: mode, Resource: "pods", Round: round, Objects: 10000, BytesPerObject: 1000,
				InitialSync: bench.Window{CPUSeconds: c[round-1] * 10000 / 1e6, PeakRatio: 1 + float64(round)/100}}
			if strings.HasPrefix(mode, "leanstore/") {
				res.InitialSync.ForcedGCs = 60 + round
			}
			r.Results = append(r.Results, res)
		}
	}
	return r
}

// TestRoundsSentencesGiveMediansAndPairedRatios checks the summary of a run
// of rounds: each mode's median and rounds, the ratio of its median to
// client-go's cache of the same kind and each round's, and the sentences of
// one result per mode written once, of the first round.
func TestRoundsSentencesGiveMediansAndPairedRatios(t *testing.T) {
	r := roundsReport(map[string][3]float64{
		"client-go/typed/stream":         {157, 300, 146},
		"leanstore/typed-lean/stream":    {231, 243, 268},
		"client-go/metadata/stream":      {58, 49, 60},
		"leanstore/metadata-lean/stream": {38, 41, 45},
	})
	got := Summary(r)
	for _, want := range []string{
		"leanstore/typed-lean/stream: CPU 243 µs (231 243 268), 1.55x client-go/typed/stream's 157 (1.47 0.81 1.84); peak 1.02 (1.01 1.02 1.03); forced 62 (61 62 63).",
		"client-go/typed/stream: CPU 157 µs (157 300 146); peak 1.02 (1.01 1.02 1.03).",
		"leanstore/metadata-lean/stream: CPU 41 µs (38 41 45), 0.71x client-go/metadata/stream's 58 (0.66 0.84 0.75); peak 1.02 (1.01 1.02 1.03); forced 62 (61 62 63).",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("the summary lacks %q; it is:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if !slices.Contains(got, "Round 1 of 3 (the medians of all rounds follow):") {
		t.Errorf("the summary does not say its per-mode sentences are of the first round:\n%s", strings.Join(got, "\n"))
	}
	n := 0
	for _, line := range got {
		if strings.HasPrefix(line, "leanstore/typed-lean/stream: 1.0 KB per object") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the per-mode sentence of leanstore/typed-lean/stream appears %d times, want once (the first round's)", n)
	}
}

// TestKindBaseline checks which client-go cache a mode's CPU is compared with.
func TestKindBaseline(t *testing.T) {
	for mode, want := range map[string]string{
		"leanstore/typed-lean/list":             "client-go/typed/stream",
		"leanstore/metadata-strip-mf-la/stream": "client-go/metadata/stream",
		"client-go/dynamic-strip-mf/list":       "client-go/dynamic/stream",
	} {
		if got := KindBaseline(mode); got != want {
			t.Errorf("KindBaseline(%s) = %s, want %s", mode, got, want)
		}
	}
}
