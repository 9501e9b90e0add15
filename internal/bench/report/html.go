package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cachetune/cachetune/internal/bench"
)

// WriteHTML writes a self-contained HTML report: the summary, client-go's and
// leanstore's comparable modes on one chart, the tables, bar charts of bytes
// per object, peak ratios, CPU and latencies, figures against dataset size in a
// scale run, and a heap-over-time chart per mode. It loads nothing from the
// network and runs no script.
func WriteHTML(w io.Writer, r bench.Report) error {
	multi := multiResource(r)
	scale := sized(r)
	label := func(res bench.Result) string {
		l := res.Label()
		if multi {
			l += " (" + res.Resource + ")"
		}
		if scale {
			l += fmt.Sprintf(" at %s", sizeLabel(float64(res.Objects)))
		}
		return l
	}
	var ok []bench.Result
	for _, res := range r.Results {
		if res.Objects > 0 {
			ok = append(ok, res)
		}
	}
	rowsOf := func(f func(bench.Result) []float64) []barRow {
		rows := make([]barRow, len(ok))
		for i, res := range ok {
			rows[i] = barRow{Label: label(res), Values: f(res)}
		}
		return rows
	}
	var charts []modeChart
	for _, res := range ok {
		charts = append(charts, modeChart{Label: label(res), Title: res.Title, Chart: heapChart(res)})
	}
	data := htmlData{
		R:            r,
		Summary:      Summary(r),
		Header:       tableHeader(multi),
		Rows:         tableRows(r),
		RelistHeader: relistHeader(multi),
		RelistRows:   relistRows(r),
		EventsHeader: eventsHeader(multi),
		EventsRows:   eventsRows(r),
		Notes:        notes(r),
		Started:      r.Started.UTC().Format(time.RFC3339),
		Duration:     r.Finished.Sub(r.Started).Round(time.Second).String(),
		Churn:        churnText(r.Plan),
		Compare:      phaseChart(comparableLines(firstRound(r)), r.Plan),
		Charts:       charts,
	}
	data.barCharts(r, rowsOf)
	data.EventsP99, data.EventsP50, data.EventsCPU = eventCharts(medianEvents(r))
	if scale {
		data.scaleCharts(firstRound(r))
	}
	data.Failures = failures(r)
	return reportTemplate.Execute(w, data)
}

// htmlData is what reportTemplate renders.
type htmlData struct {
	R                          bench.Report
	Summary                    []string
	Header, RelistHeader       []string
	Rows, RelistRows           [][]string
	EventsHeader               []string
	EventsRows                 [][]string
	EventsP99, EventsP50       template.HTML
	EventsCPU                  template.HTML
	Notes                      []string
	Failures                   []string
	Started, Duration, Churn   string
	Compare                    template.HTML
	BytesPerObject, PeakRatios template.HTML
	RelistPeaks, CPU           template.HTML
	Probe, Sched               template.HTML
	ScaleBytes, ScaleInit      template.HTML
	ScaleRelist, ScaleCPU      template.HTML
	Charts                     []modeChart
}

// modeChart is one mode's heap-over-time chart.
type modeChart struct {
	Label, Title string
	Chart        template.HTML
}

func kbText(v float64) string    { return fmt.Sprintf("%.1f KB", v) }
func ratioText(v float64) string { return fmt.Sprintf("%.2fx", v) }
func usText(v float64) string    { return fmt.Sprintf("%.0f µs", v) }

// barCharts draws the bar charts, one bar group per successful mode (rowsOf).
func (d *htmlData) barCharts(r bench.Report, rowsOf func(func(bench.Result) []float64) []barRow) {
	// Re-list peaks: one bar per re-list, named after its churn.
	var relistSeries []string
	for k := 1; k <= r.Plan.Relists; k++ {
		relistSeries = append(relistSeries, relistName(r.Plan, k))
	}
	d.BytesPerObject = bytesChart(r, rowsOf, kbText)
	d.PeakRatios = barChart(rowsOf(func(res bench.Result) []float64 {
		return []float64{res.InitialSync.PeakRatio, orNaN(res, res.RelistPeakRatio())}
	}), []string{"initial-sync peak / live", "highest re-list peak / live"}, ratioText)
	d.RelistPeaks = barChart(rowsOf(func(res bench.Result) []float64 {
		v := make([]float64, len(relistSeries))
		for i := range v {
			v[i] = math.NaN()
			if i < len(res.Relists) && res.Relists[i].Error == "" {
				v[i] = res.Relists[i].Window.PeakRatio
			}
		}
		return v
	}), relistSeries, ratioText)
	d.CPU = barChart(rowsOf(func(res bench.Result) []float64 {
		server := math.NaN()
		if res.InitialSync.Server != nil && res.Objects > 0 {
			server = res.InitialSync.Server.CPUSeconds * 1e6 / float64(res.Objects)
		}
		return []float64{res.InitialSync.CPUSeconds * 1e6 / float64(res.Objects), server}
	}), []string{"client CPU µs per object", "server CPU µs per object"}, usText)
	d.Sched = barChart(rowsOf(func(res bench.Result) []float64 {
		return []float64{res.Idle.Runtime.Sched.P99, orNaN(res, res.RelistSchedP99())}
	}), []string{"sched p99 idle", "sched p99 re-list"}, func(v float64) string { return ms2(v) + " ms" })
	d.Probe = barChart(rowsOf(func(res bench.Result) []float64 {
		return []float64{res.Idle.Probe.Max, orNaN(res, res.RelistProbeMax())}
	}), []string{"probe worst idle", "probe worst re-list"}, func(v float64) string { return ms1(v) + " ms" })
}

// scaleCharts draws the figures against dataset size of a scale run.
func (d *htmlData) scaleCharts(r bench.Report) {
	d.ScaleBytes = scaleChart(scaleLines(r, func(res bench.Result) float64 { return res.BytesPerObject / 1000 }), "KB per object", kbText)
	d.ScaleInit = scaleChart(scaleLines(r, func(res bench.Result) float64 { return res.InitialSync.PeakRatio }), "initial-sync peak / live", ratioText)
	d.ScaleRelist = scaleChart(scaleLines(r, func(res bench.Result) float64 { return orNaN(res, res.RelistPeakRatio()) }), "highest re-list peak / live", ratioText)
	d.ScaleCPU = scaleChart(scaleLines(r, func(res bench.Result) float64 { return res.InitialSync.CPUSeconds * 1e6 / float64(res.Objects) }),
		"sync CPU µs per object", usText)
}

// failures lists every failed mode, reconcile list and re-list of r.
func failures(r bench.Report) []string {
	var out []string
	for _, res := range r.Results {
		if res.Error != "" {
			out = append(out, res.Label()+": "+res.Error)
		}
		if l := res.ReconcileList; l != nil && l.Error != "" {
			out = append(out, fmt.Sprintf("%s reconcile list: %s", res.Label(), l.Error))
		}
		for _, rl := range res.Relists {
			if rl.Error != "" {
				out = append(out, fmt.Sprintf("%s re-list %d: %s", res.Label(), rl.Index, rl.Error))
			}
		}
		for _, e := range eventFailures(res) {
			out = append(out, res.Label()+" "+e)
		}
	}
	return out
}

// bytesChart draws the live heap per object and, when any mode has a
// reader, beside it what one reconcile list allocated per object: the deep
// copy a controller-runtime client makes next to the cache it copies.
func bytesChart(r bench.Report, rowsOf func(func(bench.Result) []float64) []barRow, kb func(float64) string) template.HTML {
	live := "KB per object (live heap after GC)"
	if !slices.ContainsFunc(r.Results, func(res bench.Result) bool { return res.ReconcileList != nil }) {
		return barChart(rowsOf(func(res bench.Result) []float64 { return []float64{res.BytesPerObject / 1000} }), []string{live}, kb)
	}
	return barChart(rowsOf(func(res bench.Result) []float64 {
		list := math.NaN()
		if l := res.ReconcileList; l != nil && l.Error == "" {
			list = l.AllocatedPerObject() / 1000
		}
		return []float64{res.BytesPerObject / 1000, list}
	}), []string{live, "KB allocated per object by a reconcile list"}, kb)
}

func orNaN(res bench.Result, v float64) float64 {
	if len(res.Relists) == 0 {
		return math.NaN()
	}
	return v
}

// relistName names re-list k by its churn.
func relistName(p bench.Plan, k int) string {
	if c := p.ChurnAt(k); c > 0 {
		return fmt.Sprintf("re-list %d, %s%% changed", k, trimFloat(100*c))
	}
	return fmt.Sprintf("re-list %d, no changes", k)
}

// churnText describes the plan's churn for the report's header.
func churnText(p bench.Plan) string {
	var parts []string
	for k := 1; k <= p.Relists; k++ {
		parts = append(parts, trimFloat(p.ChurnAt(k)))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("objects changed before each re-list: %s of them (seed %d)", strings.Join(parts, ", "), p.ChurnSeed)
}

var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>cachebench report</title>
<style>
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #ccc; padding: 3px 5px; text-align: right; }
th { background: #f3f3f3; }
td:first-child, th:first-child { text-align: left; }
.meta { color: #555; font-size: 13px; }
.fail { color: #b00; }
.wide { overflow-x: auto; max-width: 100%; }
h3 { font-size: 14px; margin-bottom: 2px; }
figure { margin: 0 0 1.5em 0; }
</style>
</head>
<body>
<h1>cachebench</h1>
<p class="meta">{{.R.Environment.Target}}{{with .R.Environment.ServerVersion}} (server {{.}}){{end}};
{{.R.Environment.GoVersion}}{{with .R.Environment.ClientGo}}, client-go {{.}}{{end}}, {{.R.Environment.OS}}/{{.R.Environment.Arch}}, {{.R.Environment.CPUs}} CPUs{{with .R.Environment.GOGC}}, GOGC={{.}}{{end}}{{with .R.Environment.GOMEMLIMIT}}, GOMEMLIMIT={{.}}{{end}}{{with .R.Environment.ServerArgs}}, server flags {{.}}{{end}}{{with .R.Environment.ServerGOGC}}, server GOGC={{.}}{{end}};
started {{.Started}}, took {{.Duration}}; {{.R.Plan.Relists}} forced re-lists per mode (410 Gone on the watch){{with .Churn}}, {{.}}{{end}}; settle {{.R.Plan.Settle.D}}, idle window {{.R.Plan.Idle.D}}.</p>

<h2>Summary</h2>
<ul>
{{range .Summary}}<li>{{.}}</li>
{{end}}</ul>
{{with .R.Skipped}}<h2>Left out</h2>
<ul>
{{range .}}<li>{{.}}</li>
{{end}}</ul>
{{end}}{{with .Failures}}<h2 class="fail">Failures</h2>
<ul class="fail">
{{range .}}<li>{{.}}</li>
{{end}}</ul>
{{end}}
{{with .Compare}}<h2>client-go and leanstore, side by side</h2>
<p class="meta">Heap over each mode's live heap after the sync, for the modes that differ only in the library. Each column is a phase
of the run, as wide as its longest line: the initial sync, then each re-list from its list request to a settle after its last event
(the idle window and the writing of changes between them are left out).</p>
<figure>{{.}}</figure>
{{end}}
<h2>Results</h2>
<div class="wide"><table>
<tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>
{{with .RelistRows}}<h2>Re-lists</h2>
<div class="wide"><table>
<tr>{{range $.RelistHeader}}<th>{{.}}</th>{{end}}</tr>
{{range .}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>
{{end}}{{with .EventsRows}}<h2>Events in steady state</h2>
<div class="wide"><table>
<tr>{{range $.EventsHeader}}<th>{{.}}</th>{{end}}</tr>
{{range .}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>
{{end}}<p class="meta">{{range .Notes}}{{.}} {{end}}Heap is sampled every {{.R.Plan.SampleEvery.D}}. The list path is what the server
saw (through cachebench's proxy): requests for the initial sync and every re-list.</p>

<h2>Bytes per object</h2>
<figure>{{.BytesPerObject}}</figure>
<h2>Peak heap over live heap</h2>
<figure>{{.PeakRatios}}</figure>
<h2>Re-list peaks by churn</h2>
<figure>{{.RelistPeaks}}</figure>
<h2>Sync CPU per object</h2>
<figure>{{.CPU}}</figure>
<h2>Scheduler latency, p99</h2>
<figure>{{.Sched}}</figure>
<h2>Worst 1 ms-probe lateness</h2>
<figure>{{.Probe}}</figure>
{{if .EventsP99}}
<h2>Delivery latency against write rate</h2>
<p class="meta">Each mode's steps of the events phase, at the rate each achieved: from a write sent to its event in the handler.{{if gt .R.Plan.Rounds 1}} Each point is the median of the {{.R.Plan.Rounds}} rounds (the rate achieved, the latency and the CPU per event each).{{end}}</p>
<h3>p99</h3>
<figure>{{.EventsP99}}</figure>
<h3>p50</h3>
<figure>{{.EventsP50}}</figure>
<h2>CPU per event against write rate</h2>
<figure>{{.EventsCPU}}</figure>
{{end}}{{if .ScaleBytes}}
<h2>Against dataset size</h2>
<h3>Bytes per object</h3>
<figure>{{.ScaleBytes}}</figure>
<h3>Initial-sync peak</h3>
<figure>{{.ScaleInit}}</figure>
<h3>Highest re-list peak</h3>
<figure>{{.ScaleRelist}}</figure>
<h3>Sync CPU per object</h3>
<figure>{{.ScaleCPU}}</figure>
{{end}}
<h2>Heap over time</h2>
{{range .Charts}}<h3>{{.Label}}: {{.Title}}</h3>
<figure>{{.Chart}}</figure>
{{end}}
</body>
</html>
`))
