package bench

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"time"
)

// WriteHTML writes a self-contained HTML report: the summary, the table, bar
// charts of bytes per object, peak ratios and latencies, and a heap-over-time
// chart per mode. It loads nothing from the network and runs no script.
func WriteHTML(w io.Writer, r Report) error {
	multi := multiResource(r)
	label := func(res Result) string {
		if multi {
			return res.Mode + " (" + res.Resource + ")"
		}
		return res.Mode
	}
	var ok []Result
	for _, res := range r.Results {
		if res.Objects > 0 {
			ok = append(ok, res)
		}
	}
	rowsOf := func(f func(Result) []float64) []barRow {
		rows := make([]barRow, len(ok))
		for i, res := range ok {
			rows[i] = barRow{Label: label(res), Values: f(res)}
		}
		return rows
	}
	orNaN := func(res Result, v float64) float64 {
		if len(res.Relists) == 0 {
			return math.NaN()
		}
		return v
	}
	type modeChart struct {
		Label, Title string
		Chart        template.HTML
	}
	var charts []modeChart
	for _, res := range ok {
		charts = append(charts, modeChart{Label: label(res), Title: res.Title, Chart: heapChart(res)})
	}
	data := struct {
		R                          Report
		Summary                    []string
		Header                     []string
		Rows                       [][]string
		Failures                   []string
		Started, Duration          string
		BytesPerObject, PeakRatios template.HTML
		Probe, Sched               template.HTML
		Charts                     []modeChart
	}{
		R:        r,
		Summary:  Summary(r),
		Header:   tableHeader(multi),
		Rows:     tableRows(r),
		Started:  r.Started.UTC().Format(time.RFC3339),
		Duration: r.Finished.Sub(r.Started).Round(time.Second).String(),
		BytesPerObject: barChart(rowsOf(func(res Result) []float64 { return []float64{res.BytesPerObject / 1000} }),
			[]string{"KB per object (live heap after GC)"}, func(v float64) string { return fmt.Sprintf("%.1f KB", v) }),
		PeakRatios: barChart(rowsOf(func(res Result) []float64 {
			return []float64{res.InitialSync.PeakRatio, orNaN(res, res.RelistPeakRatio())}
		}), []string{"initial-sync peak / live", "re-list peak / live"}, func(v float64) string { return fmt.Sprintf("%.2fx", v) }),
		Sched: barChart(rowsOf(func(res Result) []float64 {
			return []float64{res.Idle.Runtime.Sched.P99, orNaN(res, res.RelistSchedP99())}
		}), []string{"sched p99 idle", "sched p99 re-list"}, func(v float64) string { return ms2(v) + " ms" }),
		Probe: barChart(rowsOf(func(res Result) []float64 {
			return []float64{res.Idle.Probe.Max, orNaN(res, res.RelistProbeMax())}
		}), []string{"probe worst idle", "probe worst re-list"}, func(v float64) string { return ms1(v) + " ms" }),
		Charts: charts,
	}
	for _, res := range r.Results {
		if res.Error != "" {
			data.Failures = append(data.Failures, res.Mode+": "+res.Error)
		}
		for _, rl := range res.Relists {
			if rl.Error != "" {
				data.Failures = append(data.Failures, fmt.Sprintf("%s re-list %d: %s", res.Mode, rl.Index, rl.Error))
			}
		}
	}
	return reportTemplate.Execute(w, data)
}

var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>cachebench report</title>
<style>
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; }
th { background: #f3f3f3; }
td:first-child, th:first-child { text-align: left; }
.meta { color: #555; font-size: 13px; }
.fail { color: #b00; }
h3 { font-size: 14px; margin-bottom: 2px; }
figure { margin: 0 0 1.5em 0; }
</style>
</head>
<body>
<h1>cachebench</h1>
<p class="meta">{{.R.Environment.Target}}{{with .R.Environment.ServerVersion}} (server {{.}}){{end}};
{{.R.Environment.GoVersion}}{{with .R.Environment.ClientGo}}, client-go {{.}}{{end}}, {{.R.Environment.OS}}/{{.R.Environment.Arch}}, {{.R.Environment.CPUs}} CPUs{{with .R.Environment.GOGC}}, GOGC={{.}}{{end}}{{with .R.Environment.GOMEMLIMIT}}, GOMEMLIMIT={{.}}{{end}};
started {{.Started}}, took {{.Duration}}; {{.R.Plan.Relists}} forced re-lists per mode (410 Gone on the watch), settle {{.R.Plan.Settle.D}}, idle window {{.R.Plan.Idle.D}}.</p>

<h2>Summary</h2>
<ul>
{{range .Summary}}<li>{{.}}</li>
{{end}}</ul>
{{with .Failures}}<h2 class="fail">Failures</h2>
<ul class="fail">
{{range .}}<li>{{.}}</li>
{{end}}</ul>
{{end}}
<h2>Results</h2>
<table>
<tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<p class="meta">Live heap and KB per object are read after a GC (KB per object leaves out the heap before the cache started). Peaks are the highest
heap sampled every {{.R.Plan.SampleEvery.D}} (live and not yet swept objects), divided by the live heap after the sync. The probe is a goroutine
that sleeps 1 ms in a loop; its lateness is how late it woke. Scheduler latency is runtime/metrics /sched/latencies:seconds.
The list path is what the server saw (through cachebench's proxy): requests for the initial sync and every re-list.</p>

<h2>Bytes per object</h2>
<figure>{{.BytesPerObject}}</figure>
<h2>Peak heap over live heap</h2>
<figure>{{.PeakRatios}}</figure>
<h2>Scheduler latency, p99</h2>
<figure>{{.Sched}}</figure>
<h2>Worst 1 ms-probe lateness</h2>
<figure>{{.Probe}}</figure>

<h2>Heap over time</h2>
{{range .Charts}}<h3>{{.Label}}: {{.Title}}</h3>
<figure>{{.Chart}}</figure>
{{end}}
</body>
</html>
`))
