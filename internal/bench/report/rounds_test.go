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
	if n := withPrefix(got, "leanstore/typed-lean/stream: 1.0 KB per object"); n != 1 {
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

// eventsRoundsReport is roundsReport's typed pair with an events phase of two
// steps in each round; leanstore's second step failed in round 2 and lost two
// events in round 3's first.
func eventsRoundsReport() bench.Report {
	r := roundsReport(map[string][3]float64{
		"client-go/typed/stream":      {157, 300, 146},
		"leanstore/typed-lean/stream": {231, 243, 268},
	})
	type fig struct{ achieved, cpu, p99 float64 }
	steps := map[string][3][2]fig{
		"client-go/typed/stream": {
			{{100, 400, 20}, {200, 300, 40}},
			{{100, 500, 10}, {190, 200, 50}},
			{{100, 420, 30}, {200, 250, 60}},
		},
		"leanstore/typed-lean/stream": {
			{{100, 360, 10}, {200, 240, 30}},
			{{100, 450, 30}, {180, 0, 0}}, // step 2 failed in round 2
			{{100, 380, 20}, {200, 300, 40}},
		},
	}
	for i := range r.Results {
		res := &r.Results[i]
		ev := &bench.EventsPhase{Objects: 1000}
		for j, f := range steps[res.Mode][res.Round-1] {
			st := bench.EventStep{Index: j + 1, Rate: float64(100 * (j + 1)), AchievedRate: f.achieved, CPUPerEvent: f.cpu}
			st.Latency.P99, st.Latency.Count = f.p99, 1000
			if res.Mode == "leanstore/typed-lean/stream" && res.Round == 2 && j == 1 {
				st.Error = "the watch ended"
			}
			if res.Mode == "leanstore/typed-lean/stream" && res.Round == 3 && j == 0 {
				st.Lost = 2
			}
			ev.Steps = append(ev.Steps, st)
		}
		res.Events = ev
	}
	return r
}

// TestEventsRoundsSentencesGiveMediansAndPairedRatios checks the summary of
// the events phase of a run of rounds: for each step, the rate achieved in
// each round, the median CPU per event and p99 with each round's, their
// ratios to client-go's cache of the same kind, a failed step left out, and
// the events lost over all rounds.
func TestEventsRoundsSentencesGiveMediansAndPairedRatios(t *testing.T) {
	got := Summary(eventsRoundsReport())
	for _, want := range []string{
		"leanstore/typed-lean/stream, against client-go/typed/stream, events: " +
			"100/s asked (100 100 100 achieved): CPU 380 µs per event (360 450 380), 0.90x (0.90 0.90 0.90), p99 20.0 ms (10.0 30.0 20.0), 1.00x (0.50 3.00 0.67); " +
			"200/s asked (200 200 achieved): CPU 270 µs per event (240 300), 1.08x (0.80 1.20), p99 35.0 ms (30.0 40.0), 0.70x (0.75 0.67); lost 2.",
		"client-go/typed/stream, events: 100/s asked (100 100 100 achieved): CPU 420 µs per event (400 500 420), p99 20.0 ms (20.0 10.0 30.0); " +
			"200/s asked (200 190 200 achieved): CPU 250 µs per event (300 200 250), p99 50.0 ms (40.0 50.0 60.0); lost 0.",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("the summary lacks %q; it is:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if n := withPrefix(got, "leanstore/typed-lean/stream, events on"); n != 1 {
		t.Errorf("the events sentence of leanstore/typed-lean/stream appears %d times, want once (the first round's)", n)
	}
}

// TestMedianEventsTakeEachStepsMedian checks what the events charts of a run
// of rounds draw: one line per mode, each step at the medians of its rounds,
// a failed step left out.
func TestMedianEventsTakeEachStepsMedian(t *testing.T) {
	r := medianEvents(eventsRoundsReport())
	type point struct{ achieved, cpu, p99 float64 }
	want := map[string][]point{
		"client-go/typed/stream":      {{100, 420, 20}, {200, 250, 50}},
		"leanstore/typed-lean/stream": {{100, 380, 20}, {200, 270, 35}},
	}
	if len(r.Results) != len(want) {
		t.Fatalf("%d results, want one per mode (%d)", len(r.Results), len(want))
	}
	for _, res := range r.Results {
		var got []point
		for _, st := range res.Events.Steps {
			got = append(got, point{st.AchievedRate, st.CPUPerEvent, st.Latency.P99})
		}
		if !slices.Equal(got, want[res.Mode]) {
			t.Errorf("%s: steps %v, want %v", res.Mode, got, want[res.Mode])
		}
	}
	var html strings.Builder
	if err := WriteHTML(&html, eventsRoundsReport()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "Each point is the median of the 3 rounds") {
		t.Error("the HTML report does not say its events charts draw the medians of the rounds")
	}
}

// withPrefix counts the lines that start with prefix.
func withPrefix(lines []string, prefix string) int {
	n := 0
	for _, line := range lines {
		if strings.HasPrefix(line, prefix) {
			n++
		}
	}
	return n
}
