package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cachetune/cachetune/internal/bench"
)

// firstRound is r with the results of its first round only: what the
// sentences and charts that show one result per mode read. A run of one
// round is returned whole.
func firstRound(r bench.Report) bench.Report {
	if r.Plan.Rounds <= 1 {
		return r
	}
	r.Results = slices.DeleteFunc(slices.Clone(r.Results), func(res bench.Result) bool { return res.Round > 1 })
	return r
}

// roundsSentences sum up a run of several rounds (Plan.Rounds): for each
// mode and resource, the median over the rounds of its sync CPU per object,
// initial-sync peak and forced collections, each round's beside it, and the
// median's ratio to the median of client-go's cache of the same kind
// (KindBaseline), with the ratio of each round, in which the two ran minutes
// apart. A round in which a mode failed is left out of its figures.
func roundsSentences(r bench.Report) []string {
	if r.Plan.Rounds <= 1 {
		return nil
	}
	order, by := resultsByMode(r)
	if len(order) == 0 {
		return nil
	}
	cpu := func(res bench.Result) float64 { return float64(res.SyncCPUPerObject()) / float64(time.Microsecond) }
	peak := func(res bench.Result) float64 { return res.InitialSync.PeakRatio }
	forced := func(res bench.Result) float64 { return float64(res.InitialSync.ForcedGCs) }
	out := []string{fmt.Sprintf("Rounds: %d, every mode once per round, the order reversed every other round. Sync CPU in µs per object, initial-sync peak over the live heap and the collections leanstore forced: the median of the rounds, then each round's in order; the ratio is of the medians, against client-go's cache of the same kind, then of each round's pair.", r.Plan.Rounds)}
	for _, k := range order {
		rs := by[k]
		line := k.mode
		if multiResource(r) {
			line += " (" + k.resource + ")"
		}
		line += fmt.Sprintf(": CPU %s µs (%s)", fmtMedian(rs, cpu, "%.0f"), joinEach(rs, cpu, "%.0f"))
		if base := KindBaseline(k.mode); base != "" && base != k.mode {
			if bs := by[modeKey{base, k.resource}]; len(bs) > 0 {
				line += fmt.Sprintf(", %.2fx %s's %s", ratioOf(median(rs, cpu), median(bs, cpu)), base, fmtMedian(bs, cpu, "%.0f"))
				if pairs := pairedRatios(rs, bs, cpu); pairs != "" {
					line += " (" + pairs + ")"
				}
			}
		}
		line += fmt.Sprintf("; peak %s (%s)", fmtMedian(rs, peak, "%.2f"), joinEach(rs, peak, "%.2f"))
		if slices.ContainsFunc(rs, func(res bench.Result) bool { return res.InitialSync.ForcedGCs > 0 }) {
			line += fmt.Sprintf("; forced %s (%s)", fmtMedian(rs, forced, "%.0f"), joinEach(rs, forced, "%.0f"))
		}
		out = append(out, line+".")
	}
	return out
}

// KindBaseline is the client-go mode a mode's CPU is compared with: client-go's
// cache of the same kind (typed, dynamic or metadata-only, the word before
// the first dash of the mode's second part), streaming.
func KindBaseline(mode string) string {
	_, rest := libraryOf(mode)
	kind, _, _ := strings.Cut(rest, "/")
	kind, _, _ = strings.Cut(kind, "-")
	if kind == "" {
		return ""
	}
	return "client-go/" + kind + "/stream"
}

func median(rs []bench.Result, f func(bench.Result) float64) float64 {
	vs := make([]float64, len(rs))
	for i, res := range rs {
		vs[i] = f(res)
	}
	slices.Sort(vs)
	n := len(vs)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

func fmtMedian(rs []bench.Result, f func(bench.Result) float64, format string) string {
	return fmt.Sprintf(format, median(rs, f))
}

func joinEach(rs []bench.Result, f func(bench.Result) float64, format string) string {
	parts := make([]string, len(rs))
	for i, res := range rs {
		parts[i] = fmt.Sprintf(format, f(res))
	}
	return strings.Join(parts, " ")
}

// pairedRatios is the ratio of each round's figure to the baseline's in the
// same round, for the rounds both ran in.
func pairedRatios(rs, bs []bench.Result, f func(bench.Result) float64) string {
	var parts []string
	for _, res := range rs {
		i := slices.IndexFunc(bs, func(b bench.Result) bool { return b.Round == res.Round })
		if i < 0 || f(bs[i]) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%.2f", f(res)/f(bs[i])))
	}
	return strings.Join(parts, " ")
}

// eventsRoundsSentences sum up the events phase of a run of several rounds:
// for each mode and step, the median over the rounds of the rate achieved,
// the CPU per event and the delivery p99, each round's beside it, the ratio
// of each median to that of client-go's cache of the same kind (KindBaseline)
// with the ratio of each round's pair, and the events lost over all rounds. A
// round whose step failed is left out of that step's figures.
func eventsRoundsSentences(r bench.Report) []string {
	if r.Plan.Rounds <= 1 {
		return nil
	}
	order, by := resultsByMode(r)
	var out []string
	for _, k := range order {
		var parts []string
		lost := 0
		base := KindBaseline(k.mode)
		for i := range maxSteps(by[k]) {
			rs := withStep(by[k], i)
			if len(rs) == 0 {
				continue
			}
			step := func(res bench.Result) bench.EventStep { return res.Events.Steps[i] }
			achieved := func(res bench.Result) float64 { return step(res).AchievedRate }
			cpu := func(res bench.Result) float64 { return step(res).CPUPerEvent }
			p99 := func(res bench.Result) float64 { return step(res).Latency.P99 }
			for _, res := range rs {
				lost += step(res).Lost
			}
			p := fmt.Sprintf("%s/s asked (%s achieved): CPU %s µs per event (%s)",
				trimFloat(step(rs[0]).Rate), joinEach(rs, achieved, "%.0f"), fmtMedian(rs, cpu, "%.0f"), joinEach(rs, cpu, "%.0f"))
			bs := withStep(by[modeKey{base, k.resource}], i)
			compared := len(bs) > 0 && base != k.mode
			if compared {
				p += fmt.Sprintf(", %.2fx (%s)", ratioOf(median(rs, cpu), median(bs, cpu)), pairedRatios(rs, bs, cpu))
			}
			p += fmt.Sprintf(", p99 %s ms (%s)", fmtMedian(rs, p99, "%.1f"), joinEach(rs, p99, "%.1f"))
			if compared {
				p += fmt.Sprintf(", %.2fx (%s)", ratioOf(median(rs, p99), median(bs, p99)), pairedRatios(rs, bs, p99))
			}
			parts = append(parts, p)
		}
		if len(parts) == 0 {
			continue
		}
		line := k.mode
		if multiResource(r) {
			line += " (" + k.resource + ")"
		}
		if base != k.mode {
			line += ", against " + base
		}
		out = append(out, fmt.Sprintf("%s, events: %s; lost %d.", line, strings.Join(parts, "; "), lost))
	}
	if len(out) == 0 {
		return nil
	}
	head := fmt.Sprintf("Events, %d rounds: for each step, the rate achieved in each round; the CPU per event and the delivery p99, the median of the rounds, then each round's in order; the ratio is of the medians, against client-go's cache of the same kind, then of each round's pair.", r.Plan.Rounds)
	return append([]string{head}, out...)
}

// maxSteps is the most steps an events phase of rs has.
func maxSteps(rs []bench.Result) int {
	n := 0
	for _, res := range rs {
		if res.Events != nil {
			n = max(n, len(res.Events.Steps))
		}
	}
	return n
}

// withStep is rs without the results whose events phase has no step i or
// whose step i failed.
func withStep(rs []bench.Result, i int) []bench.Result {
	return slices.DeleteFunc(slices.Clone(rs), func(res bench.Result) bool {
		return res.Events == nil || len(res.Events.Steps) <= i || res.Events.Steps[i].Error != ""
	})
}

// medianEvents is r with one result per mode whose events steps are the
// medians over the rounds (the rate achieved, the CPU per event and the
// delivery p50 and p99; a round whose step failed left out): what the events
// charts of a run of several rounds draw. A run of one round is returned
// whole.
func medianEvents(r bench.Report) bench.Report {
	if r.Plan.Rounds <= 1 {
		return r
	}
	order, by := resultsByMode(r)
	out := r
	out.Results = nil
	for _, k := range order {
		res := by[k][0]
		if res.Events == nil {
			out.Results = append(out.Results, res)
			continue
		}
		ev := *res.Events
		ev.Steps = nil
		for i := range maxSteps(by[k]) {
			rs := withStep(by[k], i)
			if len(rs) == 0 {
				continue
			}
			step := func(res bench.Result) bench.EventStep { return res.Events.Steps[i] }
			st := step(rs[0])
			st.AchievedRate = median(rs, func(res bench.Result) float64 { return step(res).AchievedRate })
			st.CPUPerEvent = median(rs, func(res bench.Result) float64 { return step(res).CPUPerEvent })
			st.Latency.P50 = median(rs, func(res bench.Result) float64 { return step(res).Latency.P50 })
			st.Latency.P99 = median(rs, func(res bench.Result) float64 { return step(res).Latency.P99 })
			ev.Steps = append(ev.Steps, st)
		}
		res.Events = &ev
		out.Results = append(out.Results, res)
	}
	return out
}
