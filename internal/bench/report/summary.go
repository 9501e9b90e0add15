package report

import (
	"fmt"
	"strings"

	"github.com/cachetune/cachetune/internal/bench"
)

// BaselineMode is the mode every other mode is compared with: what a
// controller gets from client-go v0.37 with its defaults.
const BaselineMode = "client-go/typed/stream"

// Summary states the findings in sentences: for each dataset, its objects; for
// each resource (and size) measured, the baseline's bytes per object, sync CPU
// and peak ratios, and each other mode's against it (of the first round, in a
// run of several, whose medians follow: roundsSentences).
func Summary(r bench.Report) []string {
	rounds, eventsRounds := roundsSentences(r), eventsRoundsSentences(r)
	r = firstRound(r)
	var out []string
	for _, d := range r.Datasets {
		line := fmt.Sprintf("Dataset: %d %s", d.Count, d.Resource)
		if d.Namespace != "" {
			line += " in namespace " + d.Namespace
		}
		if d.PodShape != "" {
			line += fmt.Sprintf(" (%s-shaped)", d.PodShape)
		}
		if d.JSONBytes > 0 {
			line += fmt.Sprintf(", %.1f KB of JSON each (managedFields %.1f KB, last-applied %.1f KB)", d.JSONBytes/1000, d.ManagedFieldsBytes/1000, d.LastAppliedBytes/1000)
		}
		if d.ProtobufBytes > 0 {
			line += fmt.Sprintf(", %.1f KB as protobuf", d.ProtobufBytes/1000)
		}
		out = append(out, line+".")
	}
	if len(rounds) > 0 {
		out = append(out, fmt.Sprintf("Round 1 of %d (the medians of all rounds follow):", r.Plan.Rounds))
	}
	for _, g := range groups(r) {
		var base *bench.Result
		for i := range g {
			if g[i].Error == "" && (base == nil || g[i].Mode == BaselineMode) {
				base = &g[i]
			}
		}
		if base == nil {
			continue
		}
		what := base.Resource
		if sized(r) {
			what = fmt.Sprintf("%d %s", base.Objects, base.Resource)
		}
		relists := fmt.Sprintf("; worst 1 ms-probe lateness %s ms idle", ms1(base.Idle.Probe.Max))
		if len(base.Relists) > 0 {
			relists = fmt.Sprintf("; re-list peak %s the live heap%s; worst 1 ms-probe lateness %s ms in a re-list (%s ms idle)%s",
				relistPeaks(*base), churnNote(*base), ms1(base.RelistProbeMax()), ms1(base.Idle.Probe.Max), deliverySentence(*base))
		}
		out = append(out, fmt.Sprintf("%s (%s), %s: %.1f KB per object; sync %.2f s, %.2f s CPU (%s µs per object)%s, initial-sync peak %.2fx%s.",
			base.Title, base.Mode, what, base.BytesPerObject/1000, base.SyncSeconds, base.InitialSync.CPUSeconds,
			perObject(base.InitialSync.CPUSeconds, base.Objects), serverSentence(base.InitialSync.Server),
			base.InitialSync.PeakRatio, relists))
		for _, res := range g {
			if res.Mode == base.Mode {
				continue
			}
			if res.Error != "" {
				out = append(out, fmt.Sprintf("%s: failed (%s).", res.Title, firstLine(res.Error)))
				continue
			}
			relists := ""
			if len(res.Relists) > 0 {
				relists = fmt.Sprintf("; re-list peak %s%s; probe %s ms%s", relistPeaks(res), churnNote(res), ms1(res.RelistProbeMax()), deliverySentence(res))
			}
			out = append(out, fmt.Sprintf("%s: %.1f KB per object (%.0f%% of %s); sync %.2f s, %.2f s CPU (%.1fx), initial peak %.2fx%s.",
				res.Title, res.BytesPerObject/1000, percentOf(res.BytesPerObject, base.BytesPerObject), base.Mode,
				res.SyncSeconds, res.InitialSync.CPUSeconds, ratioOf(res.InitialSync.CPUSeconds, base.InitialSync.CPUSeconds),
				res.InitialSync.PeakRatio, relists))
		}
		if line := listSentence(g); line != "" {
			out = append(out, line)
		}
	}
	if line := samplingSentence(r); line != "" {
		out = append(out, line)
	}
	out = append(out, eventsSentences(r)...)
	out = append(out, rounds...)
	return append(out, eventsRounds...)
}

// samplingSentence says how finely the peaks were really sampled: the
// longest gap between two heap samples in any sync or re-list, against the
// interval asked. A busy or loaded machine wakes the sampler late, and a peak
// shorter than the gap may be missed.
func samplingSentence(r bench.Report) string {
	var worst float64
	where := ""
	for _, res := range r.Results {
		windows := map[string]bench.Window{"sync": res.InitialSync}
		for _, rl := range res.Relists {
			windows[fmt.Sprintf("re-list %d", rl.Index)] = rl.Window
		}
		for name, w := range windows {
			if g := w.Sampling.LongestGapMs; g > worst || g == worst && where != "" && res.Mode+" "+name < where {
				worst, where = g, res.Mode+" "+name
			}
		}
	}
	if worst == 0 {
		return "" // a report from before the gaps were recorded
	}
	return fmt.Sprintf("Heap sampled every %s; the longest gap between two samples in a sync or a re-list was %s ms (%s): a peak shorter than that may be missed.",
		r.Plan.SampleEvery.D(), ms1(worst), where)
}

// listSentence compares what one reconcile list allocated in each mode of a
// group that has a reader.
func listSentence(g []bench.Result) string {
	var parts []string
	for _, res := range g {
		if l := res.ReconcileList; res.Error == "" && l != nil && l.Error == "" {
			parts = append(parts, fmt.Sprintf("%s %.1f KB per object (peak %.2fx)", res.Mode, l.AllocatedPerObject()/1000, l.Window.PeakRatio))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "A reconcile reading every object once through the mode's reader allocated: " + strings.Join(parts, ", ") + "."
}

// relistPeaks is the highest re-list peak, or the peak of each re-list when
// any changed something.
func relistPeaks(res bench.Result) string {
	if len(res.Relists) == 0 {
		return "n/a"
	}
	churned := false
	for _, rl := range res.Relists {
		churned = churned || rl.Churn > 0
	}
	if !churned {
		return fmt.Sprintf("%.2fx", res.RelistPeakRatio())
	}
	var peaks []string
	for _, rl := range res.Relists {
		peaks = append(peaks, fmt.Sprintf("%.2fx", rl.Window.PeakRatio))
	}
	return strings.Join(peaks, " / ")
}

// churnNote names the churn of each re-list, when any changed something.
func churnNote(res bench.Result) string {
	var levels []string
	churned := false
	for _, rl := range res.Relists {
		levels = append(levels, trimFloat(rl.Churn))
		churned = churned || rl.Churn > 0
	}
	if !churned {
		return ""
	}
	return " (churn " + strings.Join(levels, " / ") + ")"
}

// deliverySentence says what the re-lists with changes delivered.
func deliverySentence(res bench.Result) string {
	var changes, missed, unchanged int
	for _, rl := range res.Relists {
		if rl.Changes.Total() == 0 {
			continue
		}
		changes += rl.Changes.Total()
		missed += rl.Missed()
		unchanged += rl.Unchanged()
	}
	if changes == 0 {
		return ""
	}
	if missed > 0 {
		return fmt.Sprintf("; re-lists MISSED %d of %d changes", missed, changes)
	}
	return fmt.Sprintf("; re-lists delivered all %d changes and %d updates of unchanged objects", changes, unchanged)
}

func serverSentence(c *bench.ServerCost) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf(", the server %.2f s CPU", c.CPUSeconds)
}

// groups splits the results by resource and, in a scale run, by size, in the
// order they first appear.
func groups(r bench.Report) [][]bench.Result {
	var keys []string
	by := map[string][]bench.Result{}
	for _, res := range r.Results {
		k := res.Resource
		if sized(r) {
			k = fmt.Sprintf("%s/%d", res.Resource, res.Objects)
		}
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], res)
	}
	out := make([][]bench.Result, len(keys))
	for i, k := range keys {
		out[i] = by[k]
	}
	return out
}

// sized reports whether the report holds more than one dataset size.
func sized(r bench.Report) bool {
	counts := map[string]map[int]bool{}
	for _, d := range r.Datasets {
		if counts[d.Resource] == nil {
			counts[d.Resource] = map[int]bool{}
		}
		counts[d.Resource][d.Count] = true
		if len(counts[d.Resource]) > 1 {
			return true
		}
	}
	return false
}

func percentOf(v, of float64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * v / of
}

func ratioOf(v, of float64) float64 {
	if of == 0 {
		return 0
	}
	return v / of
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
