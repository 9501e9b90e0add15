package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cachetune/cachetune/internal/bench"
)

// The two charts that compare modes on shared axes: heap over the live heap
// through the phases of a run (client-go and leanstore side by side), and
// figures against dataset size (a scale run).

// chartLine is one mode's line in a shared chart.
type chartLine struct {
	Label string
	Color string
	Dash  string // an SVG stroke-dasharray, "" for solid
	res   bench.Result
}

// libraryOf is the first element of a mode name ("client-go", "leanstore").
func libraryOf(mode string) (library, rest string) {
	library, rest, _ = strings.Cut(mode, "/")
	return library, rest
}

// comparableLines picks the results that have a counterpart in the other
// library (the same mode name after the library, the same resources and
// size), for the largest size that has such pairs: client-go in warm colours,
// leanstore in cool ones, LIST dashed.
func comparableLines(r bench.Report) []chartLine {
	type key struct{ rest, resource string }
	found := map[key]map[string]bench.Result{}
	var order []key
	for _, res := range r.Results {
		lib, rest := libraryOf(res.Mode)
		if res.Error != "" || res.Objects == 0 || len(res.Series.Seconds) == 0 || (lib != "client-go" && lib != "leanstore") {
			continue
		}
		k := key{rest, res.Resource}
		if found[k] == nil {
			found[k] = map[string]bench.Result{}
			order = append(order, k)
		}
		if prev, ok := found[k][lib]; !ok || res.Objects > prev.Objects {
			found[k][lib] = res
		}
	}
	size := 0
	for _, k := range order {
		if c, l := found[k]["client-go"], found[k]["leanstore"]; c.Mode != "" && l.Mode != "" && c.Objects == l.Objects {
			size = max(size, c.Objects)
		}
	}
	var lines []chartLine
	variants := map[string]int{}
	for _, k := range order {
		c, l := found[k]["client-go"], found[k]["leanstore"]
		if c.Mode == "" || l.Mode == "" || c.Objects != size || l.Objects != size {
			continue
		}
		// The variant (what is stripped or shared) picks the shade; the list
		// path the dash.
		variant, path, _ := strings.Cut(k.rest, "/")
		v, ok := variants[variant]
		if !ok {
			v = len(variants)
			variants[variant] = v
		}
		dash := ""
		if path == "list" {
			dash = "6,3"
		}
		label := func(m string) string {
			if multiResource(r) {
				return m + " (" + k.resource + ")"
			}
			return m
		}
		lines = append(lines,
			chartLine{Label: label(c.Mode), Color: warm[v%len(warm)], Dash: dash, res: c},
			chartLine{Label: label(l.Mode), Color: cool[v%len(cool)], Dash: dash, res: l})
	}
	return lines
}

// Shades for client-go (warm) and leanstore (cool) lines in shared charts.
var (
	warm = []string{"#D55E00", "#E69F00", "#CC79A7", "#8C510A"}
	cool = []string{"#0072B2", "#56B4E9", "#009E73", "#000000"}
)

// phase is a stretch of a run that every mode has: the initial sync, or a
// re-list (from its list request to its settle).
type phase struct {
	title    string
	duration float64 // the longest any line takes
}

func phasesOf(res bench.Result) [][2]float64 {
	start := 0.0
	if len(res.Markers) > 0 {
		start = res.Markers[0].Seconds
	}
	out := [][2]float64{{start, res.InitialSync.EndSeconds}}
	for _, rl := range res.Relists {
		out = append(out, [2]float64{rl.Window.StartSeconds, rl.Window.EndSeconds})
	}
	return out
}

const (
	phaseW, phaseLeft, phaseRight = 1000, 56, 12
	phaseTop, phaseH, phaseBottom = 44, 260, 28
	phaseGap, phaseMinW           = 14, 70
)

// phaseChart draws the lines' heap over their live heap through the phases of
// the run on one pair of axes: each phase is a column as wide as its longest
// line, so that the sync and every re-list line up across modes whatever the
// time between them (idle windows, the writing of changes). The legend lists
// each line under the chart.
func phaseChart(lines []chartLine, plan bench.Plan) template.HTML {
	if len(lines) == 0 {
		return ""
	}
	g := newPhaseGrid(lines, plan)
	legendRows := (len(lines) + 1) / 2
	h := phaseTop + phaseH + phaseBottom + 18*legendRows + 8

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`, phaseW, h, phaseW, h)
	g.drawAxes(&b)
	for _, ln := range lines {
		g.drawLine(&b, ln)
	}
	drawPhaseLegend(&b, lines)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// phaseGrid places the phases of a phase chart: a column per phase and one
// y scale for all.
type phaseGrid struct {
	phases        []phase
	lefts, widths []float64
	yMax, yStep   float64
}

// newPhaseGrid collects the phases every line goes through, each as long as
// its longest line, and the highest heap ratio within them.
func newPhaseGrid(lines []chartLine, plan bench.Plan) phaseGrid {
	var g phaseGrid
	yMax := 1.5
	for _, ln := range lines {
		for i, p := range phasesOf(ln.res) {
			if i == len(g.phases) {
				g.phases = append(g.phases, phase{title: phaseTitle(plan, i)})
			}
			g.phases[i].duration = max(g.phases[i].duration, p[1]-p[0])
		}
		for i, t := range ln.res.Series.Seconds {
			if ln.res.LiveHeap > 0 && inPhases(phasesOf(ln.res), t) {
				yMax = max(yMax, float64(ln.res.Series.Heap[i])/float64(ln.res.LiveHeap))
			}
		}
	}
	var total float64
	for _, p := range g.phases {
		total += max(p.duration, 1e-3)
	}
	plotW := float64(phaseW - phaseLeft - phaseRight - phaseGap*(len(g.phases)-1))
	spare := plotW - float64(phaseMinW*len(g.phases))
	g.widths = make([]float64, len(g.phases))
	g.lefts = make([]float64, len(g.phases))
	x0 := float64(phaseLeft)
	for i, p := range g.phases {
		g.widths[i] = phaseMinW + max(0, spare)*max(p.duration, 1e-3)/total
		g.lefts[i] = x0
		x0 += g.widths[i] + phaseGap
	}
	g.yStep = niceStep(yMax / 5)
	g.yMax = math.Ceil(yMax/g.yStep) * g.yStep
	return g
}

// phaseTitle names phase i: the initial sync, or a re-list and its churn.
func phaseTitle(plan bench.Plan, i int) string {
	if i == 0 {
		return "initial sync"
	}
	title := fmt.Sprintf("re-list %d", i)
	if c := plan.ChurnAt(i); c > 0 {
		return title + fmt.Sprintf(", %s%% changed", trimFloat(100*c))
	}
	return title + ", no changes"
}

func (g phaseGrid) y(v float64) float64 { return phaseTop + phaseH - v/g.yMax*phaseH }

// drawAxes draws the y axis, and each phase's column with its grid, the live
// heap's line, its title, duration and time axis.
func (g phaseGrid) drawAxes(b *strings.Builder) {
	for v := 0.0; v <= g.yMax+g.yStep/2; v += g.yStep {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, phaseLeft-4, g.y(v)+4, trimFloat(v))
	}
	fmt.Fprintf(b, `<text x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">heap / live heap</text>`, phaseTop+phaseH/2, phaseTop+phaseH/2)
	for i, p := range g.phases {
		l, w := g.lefts[i], g.widths[i]
		fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#fafafa" stroke="#ddd"/>`, l, phaseTop, w, phaseH)
		for v := g.yStep; v < g.yMax; v += g.yStep {
			fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/>`, l, l+w, g.y(v), g.y(v))
		}
		ly := g.y(1)
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#009E73" stroke-dasharray="1,3"/>`, l, l+w, ly, ly)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" font-weight="bold">%s</text>`, l+w/2, phaseTop-22, esc(fitText(p.title, w)))
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s s</text>`, l+w/2, phaseTop-8, trimFloat(roundTo(p.duration, 2)))
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="start">0</text><text x="%.1f" y="%d" text-anchor="end">%s</text>`,
			l, phaseTop+phaseH+13, l+w, phaseTop+phaseH+13, trimFloat(roundTo(p.duration, 2)))
	}
}

// drawLine draws one line's heap ratio in each phase's column.
func (g phaseGrid) drawLine(b *strings.Builder, ln chartLine) {
	res := ln.res
	for i, p := range phasesOf(res) {
		if i >= len(g.phases) || res.LiveHeap == 0 {
			break
		}
		var pts []string
		for j, t := range res.Series.Seconds {
			if t < p[0] || t > p[1] {
				continue
			}
			px := g.lefts[i] + (t-p[0])/max(g.phases[i].duration, 1e-3)*g.widths[i]
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, g.y(float64(res.Series.Heap[j])/float64(res.LiveHeap))))
		}
		if len(pts) < 2 {
			continue
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.6"%s points="%s"><title>%s</title></polyline>`,
			ln.Color, dashAttr(ln.Dash), strings.Join(pts, " "), esc(ln.Label))
	}
}

// drawPhaseLegend draws the legend under a phase chart: the live heap, then
// each line, two to a row.
func drawPhaseLegend(b *strings.Builder, lines []chartLine) {
	ly0 := phaseTop + phaseH + phaseBottom + 4
	fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#009E73" stroke-dasharray="1,3"/><text x="%d" y="%d" fill="#555">live heap after the sync (1)</text>`,
		phaseW-phaseRight-200, phaseW-phaseRight-172, ly0-16, ly0-16, phaseW-phaseRight-166, ly0-12)
	for i, ln := range lines {
		lx := phaseLeft + (i%2)*(phaseW-phaseLeft)/2
		ly := phaseTop + phaseH + phaseBottom + 18*(i/2) + 4
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">%s</text>`,
			lx, lx+28, ly, ly, ln.Color, dashAttr(ln.Dash), lx+34, ly+4, esc(ln.Label))
	}
}

// dashAttr is the stroke-dasharray attribute of a dash pattern, "" for none.
func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return ` stroke-dasharray="` + dash + `"`
}

func inPhases(ps [][2]float64, t float64) bool {
	for _, p := range ps {
		if t >= p[0] && t <= p[1] {
			return true
		}
	}
	return false
}

// fitText shortens s to what fits in width pixels of 11px text.
func fitText(s string, width float64) string {
	n := int(width / charW)
	if r := []rune(s); len(r) > n && n > 1 {
		return string(r[:n-1]) + "…"
	}
	return s
}

func roundTo(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// scaleSeries is one mode's figure at each dataset size.
type scaleSeries struct {
	chartLine
	sizes  []float64
	values []float64
}

// modeKey is a mode and the resource it cached.
type modeKey struct{ mode, resource string }

// resultsByMode groups the results that cached objects by mode and resource
// (the sizes of a scale run, the rounds of a run of rounds), in the order the
// modes first appear.
func resultsByMode(r bench.Report) ([]modeKey, map[modeKey][]bench.Result) {
	var order []modeKey
	by := map[modeKey][]bench.Result{}
	for _, res := range r.Results {
		if res.Error != "" || res.Objects == 0 {
			continue
		}
		k := modeKey{res.Mode, res.Resource}
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], res)
	}
	return order, by
}

// scaleLines returns, for each mode (and resource) measured at two sizes or
// more, its figure f at each size, in the order the modes first appear.
func scaleLines(r bench.Report, f func(bench.Result) float64) []scaleSeries {
	order, by := resultsByMode(r)
	var out []scaleSeries
	shade := map[string]int{}
	for _, k := range order {
		rs := by[k]
		if len(rs) < 2 {
			continue
		}
		slices.SortFunc(rs, func(a, b bench.Result) int { return a.Objects - b.Objects })
		lib, rest := libraryOf(k.mode)
		colors := cool
		if lib == "client-go" {
			colors = warm
		}
		s := scaleSeries{chartLine: chartLine{Label: k.mode, Color: colors[shade[lib]%len(colors)]}}
		shade[lib]++
		if strings.HasSuffix(rest, "/list") {
			s.Dash = "6,3"
		}
		if multiResource(r) {
			s.Label += " (" + k.resource + ")"
		}
		for _, res := range rs {
			s.sizes = append(s.sizes, float64(res.Objects))
			s.values = append(s.values, f(res))
		}
		out = append(out, s)
	}
	return out
}

const (
	scaleW, scaleLeft, scaleRight = 720, 56, 230
	scaleTop, scaleH, scaleBottom = 16, 200, 34
)

// scaleChart draws each series' figure against dataset size, the size on a
// log scale, the legend on the right.
func scaleChart(series []scaleSeries, yLabel string, format func(float64) string) template.HTML {
	return xyChart(series, axes{x: "objects (log scale)", y: yLabel}, format)
}

// axes are a line chart's axis labels and scales: x is always logarithmic,
// from the smallest to the largest x; y is linear from 0 unless logY.
type axes struct {
	x, y string
	logY bool
	// ticks are the x values labelled; nil labels every x of the series.
	ticks []float64
}

// xyChart draws each series' values against its x values (scaleSeries.sizes),
// the legend on the right.
func xyChart(series []scaleSeries, ax axes, format func(float64) string) template.HTML {
	if len(series) == 0 {
		return ""
	}
	lo, hi := math.Inf(1), 0.0
	yLo, yHi := math.Inf(1), 0.0
	ticks := ax.ticks
	for _, s := range series {
		for i, n := range s.sizes {
			lo, hi = math.Min(lo, n), math.Max(hi, n)
			if v := s.values[i]; !math.IsNaN(v) && (!ax.logY || v > 0) {
				yLo, yHi = math.Min(yLo, v), math.Max(yHi, v)
			}
			if ax.ticks == nil && !slices.Contains(ticks, n) {
				ticks = append(ticks, n)
			}
		}
	}
	for _, n := range ax.ticks {
		lo, hi = math.Min(lo, n), math.Max(hi, n)
	}
	if hi <= lo {
		hi = lo * 10
	}
	plotW := float64(scaleW - scaleLeft - scaleRight)
	x := func(n float64) float64 {
		return scaleLeft + (math.Log10(n)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*plotW
	}
	// The legend is as wide as its longest label, up to a limit: mode names
	// that differ only at their end must stay apart.
	right := scaleRight
	for _, s := range series {
		right = max(right, min(int(float64(len([]rune(s.Label)))*charW)+44, 420))
	}
	width := scaleW - scaleRight + right
	yTicks, y := linearY(yHi)
	if ax.logY {
		yTicks, y = logY(yLo, yHi)
	}
	h := max(scaleTop+scaleH+scaleBottom, scaleTop+16*len(series)+8)

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`, width, h, width, h)
	for _, v := range yTicks {
		label := trimFloat(v)
		if ax.logY {
			label = strconv.FormatFloat(v, 'g', -1, 64)
		}
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`,
			scaleLeft, scaleLeft+plotW, y(v), y(v), scaleLeft-4, y(v)+4, label)
	}
	slices.Sort(ticks)
	for _, n := range ticks {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#eee"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`,
			x(n), x(n), scaleTop, scaleTop+scaleH, x(n), scaleTop+scaleH+14, sizeLabel(n))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, scaleLeft+plotW/2, scaleTop+scaleH+30, esc(ax.x))
	fmt.Fprintf(&b, `<text x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">%s</text>`, scaleTop+scaleH/2, scaleTop+scaleH/2, esc(ax.y))
	for i, s := range series {
		dash := ""
		if s.Dash != "" {
			dash = ` stroke-dasharray="` + s.Dash + `"`
		}
		var pts []string
		for j, n := range s.sizes {
			v := s.values[j]
			if math.IsNaN(v) || (ax.logY && v <= 0) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(n), y(v)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s at %s: %s</title></circle>`,
				x(n), y(v), s.Color, esc(s.Label), sizeLabel(n), esc(format(v)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6"%s points="%s"/>`, s.Color, dash, strings.Join(pts, " "))
		lx, ly := scaleW-scaleRight+12, scaleTop+16*i+8
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">%s</text>`,
			lx, lx+20, ly, ly, s.Color, dash, lx+24, ly+4, esc(fitText(s.Label, float64(right-40))))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// linearY is a y axis from 0 to a round value above yMax: its gridlines and
// the position of a value.
func linearY(yMax float64) ([]float64, func(float64) float64) {
	if yMax <= 0 || math.IsInf(yMax, 0) {
		yMax = 1
	}
	step := niceStep(yMax / 4)
	yMax = math.Ceil(yMax/step) * step
	var ticks []float64
	for v := 0.0; v <= yMax+step/2; v += step {
		ticks = append(ticks, v)
	}
	return ticks, func(v float64) float64 { return scaleTop + scaleH - v/yMax*scaleH }
}

// logY is a y axis on a log scale over the powers of ten around [lo, hi].
func logY(lo, hi float64) ([]float64, func(float64) float64) {
	if !(lo > 0) || math.IsInf(lo, 0) || !(hi > 0) {
		lo, hi = 1, 10
	}
	a, b := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if b <= a {
		b = a + 1
	}
	var ticks []float64
	for e := a; e <= b; e++ {
		ticks = append(ticks, math.Pow(10, e))
	}
	return ticks, func(v float64) float64 { return scaleTop + scaleH - (math.Log10(v)-a)/(b-a)*scaleH }
}

// sizeLabel writes an object count short: 1k, 30k, 1.5M.
func sizeLabel(n float64) string {
	switch {
	case n >= 1e6:
		return trimFloat(n/1e6) + "M"
	case n >= 1e3:
		return trimFloat(n/1e3) + "k"
	}
	return trimFloat(n)
}
