package mutants

import (
	"fmt"
	"strings"
	"time"
)

// Table renders results as the markdown table of bench/results/mutants.md.
// complete says whether every mutant of the catalog ran; header lines (the
// command, the date) come first.
func Table(results []Result, complete bool, header []string) string {
	var b strings.Builder
	b.WriteString("# Planted defects: caught and missed\n\n")
	for _, h := range header {
		b.WriteString(h + "\n")
	}
	if len(header) > 0 {
		b.WriteString("\n")
	}
	counts := map[Verdict]int{}
	var total time.Duration
	for _, r := range results {
		counts[r.Verdict]++
		total += r.Took
	}
	fmt.Fprintf(&b, "%d mutants: %d caught, %d missed, %d suite errors; %s of mutant runs",
		len(results), counts[Caught], counts[Missed], counts[SuiteError], total.Round(time.Second))
	if !complete {
		b.WriteString(" (a partial run: not every mutant of the catalog ran)")
	}
	b.WriteString(".\n\n")
	b.WriteString("| mutant | where | what it breaks | command that should catch it | result | by | time |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s | %s | `%s` | %s | %s | %s |\n",
			cell(r.Mutant.Name), cell(r.Mutant.Where), cell(r.Mutant.Breaks), cell(r.Mutant.Cmd.String()),
			r.Verdict, cell(r.By), r.Took.Round(time.Second))
	}
	return b.String()
}

// cell makes s fit a markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
