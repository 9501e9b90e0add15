package bench

import (
	"fmt"
	"strings"
)

// BaselineMode is the mode every other mode is compared with: what a
// controller gets from client-go v0.37 with its defaults.
const BaselineMode = "client-go/typed/stream"

// Summary states the findings in sentences: for each resource, the dataset,
// the baseline's bytes per object and peak ratios, and each other mode's
// against it.
func Summary(r Report) []string {
	var out []string
	for _, d := range r.Datasets {
		line := fmt.Sprintf("Dataset: %d %s", d.Count, d.Resource)
		if d.Namespace != "" {
			line += " in namespace " + d.Namespace
		}
		if d.JSONBytes > 0 {
			line += fmt.Sprintf(", %.1f KB of JSON each (managedFields %.1f KB, last-applied %.1f KB)", d.JSONBytes/1000, d.ManagedFieldsBytes/1000, d.LastAppliedBytes/1000)
		}
		if d.ProtobufBytes > 0 {
			line += fmt.Sprintf(", %.1f KB as protobuf", d.ProtobufBytes/1000)
		}
		out = append(out, line+".")
	}
	for _, resource := range resources(r) {
		var base *Result
		for i, res := range r.Results {
			if res.Resource == resource && res.Error == "" && (base == nil || res.Mode == BaselineMode) {
				base = &r.Results[i]
			}
		}
		if base == nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s), %s: %.1f KB per object; re-list peak %.2fx the live heap, initial-sync peak %.2fx; worst 1 ms-probe lateness %s ms in a re-list (%s ms idle).",
			base.Title, base.Mode, resource, base.BytesPerObject/1000, base.RelistPeakRatio(), base.InitialSync.PeakRatio,
			ms1(base.RelistProbeMax()), ms1(base.Idle.Probe.Max)))
		for _, res := range r.Results {
			if res.Resource != resource || res.Mode == base.Mode {
				continue
			}
			if res.Error != "" {
				out = append(out, fmt.Sprintf("%s: failed (%s).", res.Title, firstLine(res.Error)))
				continue
			}
			out = append(out, fmt.Sprintf("%s: %.1f KB per object (%.0f%% of %s); re-list peak %.2fx, initial %.2fx; probe %s ms.",
				res.Title, res.BytesPerObject/1000, percentOf(res.BytesPerObject, base.BytesPerObject), base.Mode,
				res.RelistPeakRatio(), res.InitialSync.PeakRatio, ms1(res.RelistProbeMax())))
		}
	}
	return out
}

func resources(r Report) []string {
	var out []string
	seen := map[string]bool{}
	for _, res := range r.Results {
		if !seen[res.Resource] {
			seen[res.Resource] = true
			out = append(out, res.Resource)
		}
	}
	return out
}

func percentOf(v, of float64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * v / of
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
