package dataset

import (
	"fmt"
	"io"
	"time"
)

// ProgressPrinter returns a Progress callback that writes a line to w at most once
// per second per kind, and always for the last object.
func ProgressPrinter(w io.Writer) func(Progress) {
	last := map[string]time.Time{}
	return func(p Progress) {
		if p.Done != p.Total && time.Since(last[p.Kind]) < time.Second {
			return
		}
		last[p.Kind] = time.Now()
		if p.Total == 0 {
			fmt.Fprintf(w, "  %s: done in %s\n", p.Kind, p.Elapsed.Round(100*time.Millisecond))
			return
		}
		rate := float64(p.Done) / max(p.Elapsed.Seconds(), 1e-3)
		fmt.Fprintf(w, "  %s: %d/%d (%.0f/s, %s)\n", p.Kind, p.Done, p.Total, rate, p.Elapsed.Round(100*time.Millisecond))
	}
}
