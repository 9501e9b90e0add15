package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"github.com/cachetune/cachetune/internal/bench"
)

// The events phase: a table row per step, a sentence per mode, and charts
// of delivery latency and CPU per event against the rate achieved.

func eventsHeader(multiResource bool) []string {
	h := []string{"mode"}
	if multiResource {
		h = append(h, "resource")
	}
	return append(h,
		"step", "writes/s asked", "writes/s achieved", "writes status/label/new/del", "failed",
		"delivered upd/add/del", "lost", "late", "p50 ms", "p99 ms", "max ms",
		"CPU µs/event", "heap growth MiB", "peak/live", "GC CPU %", "server CPU s",
	)
}

func eventsRows(r bench.Report) [][]string {
	multi := multiResource(r)
	var rows [][]string
	for _, res := range r.Results {
		ev := res.Events
		if ev == nil {
			continue
		}
		prefix := []string{res.Label()}
		if multi {
			prefix = append(prefix, res.Resource)
		}
		if ev.Error != "" && len(ev.Steps) == 0 {
			row := append(slices.Clone(prefix), "FAILED")
			for len(row) < len(eventsHeader(multi)) {
				row = append(row, "-")
			}
			rows = append(rows, row)
			continue
		}
		for _, st := range ev.Steps {
			index := fmt.Sprint(st.Index)
			if st.Error != "" {
				index += " FAILED"
			}
			w, d := st.Writes, st.Delivered
			srvCPU, _, _ := serverCells(st.Window.Server)
			rows = append(rows, append(slices.Clone(prefix),
				index,
				trimFloat(st.Rate),
				rateText(st.AchievedRate),
				fmt.Sprintf("%d/%d/%d/%d", w.Status, w.Labels, w.Created, w.Deleted),
				fmt.Sprint(w.Failed),
				fmt.Sprintf("%d/%d/%d", d.Updates, d.Adds, d.Deletes),
				fmt.Sprint(st.Lost),
				fmt.Sprint(st.Late),
				ms2(st.Latency.P50), ms2(st.Latency.P99), ms1(st.Latency.Max),
				fmt.Sprintf("%.0f", st.CPUPerEvent),
				fmt.Sprintf("%+.1f", float64(st.HeapGrowth())/(1<<20)),
				fmt.Sprintf("%.2f", st.Window.PeakRatio),
				fmt.Sprintf("%.1f", 100*st.GCCPUFraction()),
				srvCPU,
			))
		}
	}
	return rows
}

// rateText writes a rate achieved to three digits, so that a rate just
// short of the one asked does not read as it.
func rateText(v float64) string {
	if v < 100 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// eventsNotes say how the events table is measured.
var eventsNotes = []string{
	"events: after the re-lists, a writer in cachebench's own process (not the measured one) creates Pods of its own and changes them at each rate",
	"in turn, stamping every write with its sequence number and the wall-clock time it was sent; asked is the rate planned, achieved the successful",
	"writes over the time from the first sent to the last answered (the rate of the step when the server could not keep up); p50/p99/max: from a write",
	"sent to its event in the handler (a delete: to the DELETED event of its Pod, which follows an update setting its deletion timestamp, counted in",
	"delivered upd); lost: writes whose event had not arrived a drain time after the",
	"last answer; late: events slower than the plan's bound; CPU µs/event: the measured process's CPU in the step less its CPU at rest for as long,",
	"per event delivered; heap growth: live heap after the step less before it (after a GC); peak/live over the live heap before the step.",
}

// eventsSentence summarises each mode's events phase in one sentence.
func eventsSentences(r bench.Report) []string {
	var out []string
	for _, res := range r.Results {
		ev := res.Events
		if ev == nil {
			continue
		}
		if ev.Error != "" && len(ev.Steps) == 0 {
			out = append(out, fmt.Sprintf("%s, events: failed (%s).", res.Mode, firstLine(ev.Error)))
			continue
		}
		var parts []string
		for _, st := range ev.Steps {
			p := fmt.Sprintf("%s/s asked, %s/s written: p50 %s ms, p99 %s ms, max %s ms, %.0f µs CPU per event",
				trimFloat(st.Rate), rateText(st.AchievedRate), ms2(st.Latency.P50), ms2(st.Latency.P99), ms1(st.Latency.Max), st.CPUPerEvent)
			if st.Lost > 0 {
				p += fmt.Sprintf(", %d LOST", st.Lost)
			}
			parts = append(parts, p)
		}
		out = append(out, fmt.Sprintf("%s, events on %d Pods of the writer: %s; live heap %+.1f MiB over the phase.",
			res.Mode, ev.Objects, strings.Join(parts, "; "), float64(int64(ev.LiveHeapAfter)-int64(ev.LiveHeapBefore))/(1<<20)))
	}
	return out
}

// eventLines returns, per mode with an events phase, figure f of each step
// against the rate the step achieved, and the rates asked (the x axis's
// labels).
func eventLines(r bench.Report, f func(bench.EventStep) float64) ([]scaleSeries, []float64) {
	var out []scaleSeries
	var asked []float64
	shade := map[string]int{}
	for _, res := range r.Results {
		ev := res.Events
		if ev == nil || len(ev.Steps) == 0 {
			continue
		}
		lib, rest := libraryOf(res.Mode)
		colors := cool
		if lib == "client-go" {
			colors = warm
		}
		s := scaleSeries{chartLine: chartLine{Label: res.Mode, Color: colors[shade[lib]%len(colors)]}}
		// A library's shades repeat after four modes: the repeats are dotted.
		if shade[lib] >= len(colors) {
			s.Dash = "2,2"
		}
		shade[lib]++
		if strings.HasSuffix(rest, "/list") {
			s.Dash = "6,3"
		}
		if multiResource(r) {
			s.Label += " (" + res.Resource + ")"
		}
		for _, st := range ev.Steps {
			if !slices.Contains(asked, st.Rate) {
				asked = append(asked, st.Rate)
			}
			if st.AchievedRate <= 0 || st.Latency.Count == 0 {
				continue
			}
			s.sizes = append(s.sizes, st.AchievedRate)
			s.values = append(s.values, f(st))
		}
		if len(s.sizes) > 0 {
			out = append(out, s)
		}
	}
	return out, asked
}

// eventCharts draws delivery latency (p99 and p50, log scale) and CPU per
// event against the rate achieved.
func eventCharts(r bench.Report) (p99, p50, cpu template.HTML) {
	msText := func(v float64) string { return ms2(v) + " ms" }
	lines, asked := eventLines(r, func(st bench.EventStep) float64 { return st.Latency.P99 })
	if len(lines) == 0 {
		return "", "", ""
	}
	x := "writes per second achieved (log scale; labels: the rates asked)"
	p99 = xyChart(lines, axes{x: x, y: "p99 delivery ms (log scale)", logY: true, ticks: asked}, msText)
	lines, _ = eventLines(r, func(st bench.EventStep) float64 { return st.Latency.P50 })
	p50 = xyChart(lines, axes{x: x, y: "p50 delivery ms (log scale)", logY: true, ticks: asked}, msText)
	lines, _ = eventLines(r, func(st bench.EventStep) float64 {
		if st.CPUPerEvent <= 0 {
			return math.NaN()
		}
		return st.CPUPerEvent
	})
	cpu = xyChart(lines, axes{x: x, y: "CPU µs per event", ticks: asked}, usText)
	return p99, p50, cpu
}

// eventFailures lists what failed in res's events phase.
func eventFailures(res bench.Result) []string {
	ev := res.Events
	if ev == nil {
		return nil
	}
	var out []string
	if ev.Error != "" {
		out = append(out, "events phase: "+ev.Error)
	}
	for _, st := range ev.Steps {
		if st.Error != "" {
			out = append(out, fmt.Sprintf("events step %d (%s/s): %s", st.Index, trimFloat(st.Rate), st.Error))
		}
	}
	return out
}
