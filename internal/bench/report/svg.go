package report

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strings"

	"github.com/cachetune/cachetune/internal/bench"
)

// The charts are inline SVG written here, so that the report opens offline
// with no script or library: a bar chart and a heap-over-time line chart.

// palette is colour-blind friendly (Okabe-Ito).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00"}

// barRow is one labelled group of bars, one value per series.
type barRow struct {
	Label  string
	Values []float64
}

const (
	barLabelW = 300
	barAreaW  = 360
	barH      = 12
	barGap    = 2
	rowGap    = 8
)

// barChart draws horizontal grouped bars. series names the values of a row
// (the legend); format writes a value next to its bar.
func barChart(rows []barRow, series []string, format func(float64) string) template.HTML {
	var maxV float64
	for _, r := range rows {
		for _, v := range r.Values {
			if !math.IsNaN(v) {
				maxV = max(maxV, v)
			}
		}
	}
	if maxV == 0 {
		maxV = 1
	}
	n := len(series)
	rowH := n*(barH+barGap) + rowGap
	w := barLabelW + barAreaW + 80
	legendRows, lx := 1, float64(barLabelW)
	for _, s := range series {
		ew := 16 + float64(len([]rune(s)))*charW*12/11 + 14
		if lx > barLabelW && lx+ew > float64(w) {
			legendRows, lx = legendRows+1, barLabelW
		}
		lx += ew
	}
	top := 8 + 16*legendRows
	h := top + len(rows)*rowH + 4
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`, w, h, w, h)
	// The legend runs in rows from the bars' left edge, each entry as wide as
	// its text.
	lx, ly := float64(barLabelW), 4
	for i, s := range series {
		ew := 16 + float64(len([]rune(s)))*charW*12/11 + 14
		if lx > barLabelW && lx+ew > float64(w) {
			lx, ly = barLabelW, ly+16
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="12" height="12" fill="%s"/><text x="%.1f" y="%d">%s</text>`, lx, ly, color(i), lx+16, ly+10, esc(s))
		lx += ew
	}
	for ri, r := range rows {
		y0 := top + ri*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, barLabelW-8, y0+n*(barH+barGap)/2+4, esc(r.Label))
		for si, v := range r.Values {
			y := y0 + si*(barH+barGap)
			if math.IsNaN(v) {
				fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#777">n/a</text>`, barLabelW+4, y+barH-2)
				continue
			}
			bw := v / maxV * barAreaW
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s</title></rect>`,
				barLabelW, y, bw, barH, color(si), esc(series[si]), esc(format(v)))
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`, float64(barLabelW)+bw+4, y+barH-2, esc(format(v)))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

const (
	lineW, lineH                 = 720, 230
	padLeft, padRight, padBottom = 56, 12, 32
	plotW                        = lineW - padLeft - padRight
	// labelRowH is the height of a row of marker labels above a chart, and
	// charW the width of a character of their 11px sans-serif text, a little
	// generous so that neighbours never touch.
	labelRowH = 11
	charW     = 6.4
)

// heapChart draws one mode's heap (solid) and RSS (dashed) over time in MiB,
// the live heap after the sync (dotted), and a vertical line at each marker,
// its label in the first row above the plot where it overlaps no other label.
func heapChart(res bench.Result) template.HTML {
	s := res.Series
	if len(s.Seconds) == 0 {
		return template.HTML(`<p class="na">no samples</p>`)
	}
	tMax := s.Seconds[len(s.Seconds)-1]
	if tMax <= 0 {
		tMax = 1
	}
	var yMax float64
	for i := range s.Seconds {
		yMax = max(yMax, mib(s.Heap[i]), mib(s.RSS[i]))
	}
	yStep := niceStep(yMax / 4)
	yMax = math.Max(yStep, math.Ceil(yMax/yStep)*yStep)
	xStep := niceStep(tMax / 8)
	x := func(t float64) float64 { return padLeft + t/tMax*plotW }

	var xs []float64
	var texts []string
	for _, m := range res.Markers {
		xs, texts = append(xs, x(m.Seconds)), append(texts, m.Label)
	}
	placed, rows := layoutLabels(xs, texts, 0, lineW)
	padTop := 8 + rows*labelRowH
	h := padTop + 168 + padBottom
	plotH := h - padTop - padBottom
	y := func(v float64) float64 { return float64(padTop+plotH) - v/yMax*float64(plotH) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`, lineW, h, lineW, h)
	// Axes and grid.
	for v := 0.0; v <= yMax+yStep/2; v += yStep {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`,
			padLeft, padLeft+plotW, y(v), y(v), padLeft-4, y(v)+4, trimFloat(v))
	}
	for t := 0.0; t <= tMax+xStep/100; t += xStep {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x(t), padTop+plotH+14, trimFloat(t))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">seconds</text>`, padLeft+plotW/2, h-4)
	fmt.Fprintf(&b, `<text x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">MiB</text>`, padTop+plotH/2, padTop+plotH/2)
	for i, m := range res.Markers {
		mx := x(m.Seconds)
		ly := 10 + placed[i].row*labelRowH
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#D55E00" stroke-dasharray="2,2"/>`, mx, mx, ly+2, padTop+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#D55E00" text-anchor="middle">%s</text>`, placed[i].x, ly, esc(m.Label))
	}
	// Live heap after the sync.
	if res.LiveHeap > 0 {
		ly := y(mib(res.LiveHeap))
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#009E73" stroke-dasharray="1,3"/><text x="%d" y="%.1f" fill="#009E73" text-anchor="end">live</text>`,
			padLeft, padLeft+plotW, ly, ly, padLeft+plotW, ly-3)
	}
	line := func(vals []uint64, stroke, dash string) {
		b.WriteString(`<polyline fill="none" stroke="` + stroke + `" stroke-width="1.5"` + dash + ` points="`)
		for i, t := range s.Seconds {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", x(t), y(mib(vals[i])))
		}
		b.WriteString(`"/>`)
	}
	line(s.RSS, "#999", ` stroke-dasharray="4,3"`)
	line(s.Heap, palette[0], "")
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">heap</text><text x="%d" y="%d" fill="#777">RSS (dashed)</text>`,
		padLeft+6, padTop+12, palette[0], padLeft+44, padTop+12)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// placedLabel is where a label goes: its centre and its row above a chart.
type placedLabel struct {
	x   float64
	row int
}

// layoutLabels places labels centred at xs, each in the first row where it
// overlaps no label placed before it (in order of x), moved inward where it
// would cross [left, right]. It returns each label's place and the number of
// rows used.
func layoutLabels(xs []float64, texts []string, left, right float64) ([]placedLabel, int) {
	const gap = 6
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return xs[order[a]] < xs[order[b]] })
	out := make([]placedLabel, len(xs))
	var ends []float64 // right edge of the last label in each row
	for _, i := range order {
		w := float64(len([]rune(texts[i]))) * charW
		c := math.Min(math.Max(xs[i], left+w/2), right-w/2)
		row := 0
		for row < len(ends) && ends[row]+gap > c-w/2 {
			row++
		}
		if row == len(ends) {
			ends = append(ends, 0)
		}
		ends[row] = c + w/2
		out[i] = placedLabel{x: c, row: row}
	}
	return out, max(1, len(ends))
}

// niceStep rounds a raw step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

func color(i int) string { return palette[i%len(palette)] }

func esc(s string) string { return template.HTMLEscapeString(s) }
