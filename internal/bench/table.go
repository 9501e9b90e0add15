package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// tableHeader and tableRows are shared by the terminal table and the HTML
// report, so that both always show the same figures.
func tableHeader(multiResource bool) []string {
	h := []string{"mode"}
	if multiResource {
		h = append(h, "resource")
	}
	return append(h,
		"objects", "list path (server)", "sync s", "live MiB", "KB/obj",
		"init peak/live", "re-list peak/live",
		"probe max ms idle/re-list", "sched p99 ms idle/re-list",
		"GC CPU %", "MB recv",
	)
}

func tableRows(r Report) [][]string {
	multi := multiResource(r)
	var rows [][]string
	for _, res := range r.Results {
		row := []string{res.Mode}
		if multi {
			row = append(row, res.Resource)
		}
		if res.Error != "" && res.Objects == 0 {
			row = append(row, "-", pathCell(res.ListPath.Server), "FAILED")
			for len(row) < len(tableHeader(multi)) {
				row = append(row, "-")
			}
			rows = append(rows, row)
			continue
		}
		relist := "-"
		if len(res.Relists) > 0 {
			relist = fmt.Sprintf("%.2f", res.RelistPeakRatio())
		}
		row = append(row,
			fmt.Sprint(res.Objects),
			pathCell(res.ListPath.Server),
			fmt.Sprintf("%.2f", res.SyncSeconds),
			fmt.Sprintf("%.1f", mib(res.LiveHeap)),
			fmt.Sprintf("%.1f", res.BytesPerObject/1000),
			fmt.Sprintf("%.2f", res.InitialSync.PeakRatio),
			relist,
			fmt.Sprintf("%s / %s", ms1(res.Idle.Probe.Max), relistCell(res, res.RelistProbeMax())),
			fmt.Sprintf("%s / %s", ms2(res.Idle.Runtime.Sched.P99), relistCell(res, res.RelistSchedP99())),
			fmt.Sprintf("%.1f", 100*res.GCCPUFraction()),
			fmt.Sprintf("%.1f", float64(res.BytesReceived)/1e6),
		)
		rows = append(rows, row)
	}
	return rows
}

func relistCell(res Result, v float64) string {
	if len(res.Relists) == 0 {
		return "-"
	}
	return ms1(v)
}

// pathCell names the list path the server saw, with the request counts: a
// sync and two re-lists by streaming list read "streaming 3".
func pathCell(q Requests) string {
	switch q.Path() {
	case "streaming":
		return fmt.Sprintf("streaming %d", q.WatchList)
	case "LIST":
		return fmt.Sprintf("LIST %d", q.List)
	case "mixed":
		return fmt.Sprintf("mixed: %d streaming, %d LIST", q.WatchList, q.List)
	}
	return "none"
}

func multiResource(r Report) bool {
	for _, res := range r.Results {
		if res.Resource != r.Results[0].Resource {
			return true
		}
	}
	return false
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func ms1(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func ms2(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// WriteTable writes the results as an aligned table, then the failures and
// the summary.
func WriteTable(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(tableHeader(multiResource(r)), "\t"))
	for _, row := range tableRows(r) {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, res := range r.Results {
		if res.Error != "" {
			fmt.Fprintf(w, "\n%s failed: %s\n", res.Mode, res.Error)
		}
		for _, rl := range res.Relists {
			if rl.Error != "" {
				fmt.Fprintf(w, "\n%s re-list %d failed: %s\n", res.Mode, rl.Index, rl.Error)
			}
		}
	}
	fmt.Fprintln(w)
	for _, line := range Summary(r) {
		fmt.Fprintln(w, line)
	}
	_, err := fmt.Fprintln(w, "\nlive MiB and KB/obj after a GC; peaks are the highest heap sampled (live and not yet swept objects) over the live heap after the sync;")
	fmt.Fprintln(w, "probe: lateness of a goroutine sleeping 1 ms; sched: runtime/metrics /sched/latencies; GC CPU % of available CPU during sync and re-lists.")
	return err
}
