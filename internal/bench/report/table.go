package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cachetune/cachetune/internal/bench"
)

// The table functions are shared by the terminal table and the HTML report,
// so that both always show the same figures. There are two tables: one row
// per mode for the sync and the steady state, and one row per re-list.

func tableHeader(multiResource bool) []string {
	h := []string{"mode"}
	if multiResource {
		h = append(h, "resource")
	}
	return append(h,
		"objects", "list path (server)", "sync s", "sync CPU s", "CPU µs/obj",
		"server CPU s", "server peak MiB", "server read etcd/cache/stream",
		"live MiB", "KB/obj", "init peak/live", "re-list peak/live",
		"list alloc KB/obj", "list peak/live",
		"probe max ms idle/re-list", "sched p99 ms idle/re-list",
		"GC CPU %", "MB recv",
	)
}

func tableRows(r bench.Report) [][]string {
	multi := multiResource(r)
	var rows [][]string
	for _, res := range r.Results {
		row := []string{res.Label()}
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
		srvCPU, srvRSS, srvRead := serverCells(res.InitialSync.Server)
		row = append(row,
			fmt.Sprint(res.Objects),
			pathCell(res.ListPath.Server),
			fmt.Sprintf("%.2f", res.SyncSeconds),
			fmt.Sprintf("%.2f", res.InitialSync.CPUSeconds),
			perObject(res.InitialSync.CPUSeconds, res.Objects),
			srvCPU, srvRSS, srvRead,
			fmt.Sprintf("%.1f", mib(res.LiveHeap)),
			fmt.Sprintf("%.1f", res.BytesPerObject/1000),
			fmt.Sprintf("%.2f", res.InitialSync.PeakRatio),
			relist,
			listAllocCell(res.ReconcileList), listPeakCell(res.ReconcileList),
			fmt.Sprintf("%s / %s", ms1(res.Idle.Probe.Max), relistCell(res, res.RelistProbeMax())),
			fmt.Sprintf("%s / %s", ms2(res.Idle.Runtime.Sched.P99), relistCell(res, res.RelistSchedP99())),
			fmt.Sprintf("%.1f", 100*res.GCCPUFraction()),
			fmt.Sprintf("%.1f", float64(res.BytesReceived)/1e6),
		)
		rows = append(rows, row)
	}
	return rows
}

func relistHeader(multiResource bool) []string {
	h := []string{"mode"}
	if multiResource {
		h = append(h, "resource")
	}
	return append(h,
		"objects", "re-list", "churn", "changed upd/new/del", "delivered upd/add/del", "unchanged upd",
		"peak/live", "s", "CPU s", "CPU µs/obj",
		"server CPU s", "server peak MiB", "server read etcd/cache/stream",
		"probe max ms", "sched p99 ms", "MB recv",
	)
}

func relistRows(r bench.Report) [][]string {
	multi := multiResource(r)
	var rows [][]string
	for _, res := range r.Results {
		for _, rl := range res.Relists {
			row := []string{res.Label()}
			if multi {
				row = append(row, res.Resource)
			}
			w := rl.Window
			srvCPU, srvRSS, srvRead := serverCells(w.Server)
			delivered := fmt.Sprintf("%d/%d/%d", rl.Delivered.Updates, rl.Delivered.Adds, rl.Delivered.Deletes)
			if rl.Delivered == (bench.Events{}) && rl.Updates > 0 { // a schema 1 report
				delivered = fmt.Sprintf("%d adds+upd", rl.Updates)
			}
			if rl.Missed() > 0 {
				delivered += fmt.Sprintf(" (%d MISSED)", rl.Missed())
			}
			index := fmt.Sprint(rl.Index)
			if rl.Error != "" {
				index += " FAILED"
			}
			row = append(row,
				fmt.Sprint(res.Objects),
				index,
				trimFloat(rl.Churn),
				fmt.Sprintf("%d/%d/%d", rl.Changes.Updated, rl.Changes.Created, rl.Changes.Deleted),
				delivered,
				fmt.Sprint(rl.Unchanged()),
				fmt.Sprintf("%.2f", w.PeakRatio),
				fmt.Sprintf("%.2f", rl.Seconds),
				fmt.Sprintf("%.2f", w.CPUSeconds),
				perObject(w.CPUSeconds, res.Objects),
				srvCPU, srvRSS, srvRead,
				ms1(w.Probe.Max),
				ms2(w.Runtime.Sched.P99),
				fmt.Sprintf("%.1f", float64(rl.BytesReceived)/1e6),
			)
			rows = append(rows, row)
		}
	}
	return rows
}

// serverCells renders a window's server cost: CPU seconds, peak RSS, and the
// objects read from etcd, from the watch cache's lists and as streamed events.
func serverCells(c *bench.ServerCost) (cpu, rss, read string) {
	if c == nil {
		return "-", "-", "-"
	}
	read = "-"
	if s := c.Storage; s != nil {
		read = fmt.Sprintf("%.0f/%.0f/%.0f", s.EtcdObjects, s.CacheObjects, s.StreamObjects)
	}
	return fmt.Sprintf("%.2f", c.CPUSeconds), fmt.Sprintf("%.0f", mib(c.PeakRSS)), read
}

// perObject renders CPU seconds per object in microseconds.
func perObject(seconds float64, objects int) string {
	if objects == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", seconds*1e6/float64(objects))
}

// listAllocCell renders what a reconcile list allocated per object.
func listAllocCell(l *bench.ReconcileList) string {
	switch {
	case l == nil:
		return "-"
	case l.Error != "":
		return "FAILED"
	}
	return fmt.Sprintf("%.1f", l.AllocatedPerObject()/1000)
}

// listPeakCell renders a reconcile list's heap peak over the live heap.
func listPeakCell(l *bench.ReconcileList) string {
	if l == nil || l.Error != "" {
		return "-"
	}
	return fmt.Sprintf("%.2f", l.Window.PeakRatio)
}

func relistCell(res bench.Result, v float64) string {
	if len(res.Relists) == 0 {
		return "-"
	}
	return ms1(v)
}

// pathCell names the list path the server saw, with the request counts: a
// sync and two re-lists by streaming list read "streaming 3".
func pathCell(q bench.Requests) string {
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

func multiResource(r bench.Report) bool {
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

// errWriter remembers the first write error, so that a long report is
// written with plain calls and fails as a whole.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func writeTabbed(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, row := range rows {
		_, _ = fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// WriteTable writes the results as two aligned tables (sync and steady state;
// re-lists), then the failures and the summary.
func WriteTable(out io.Writer, r bench.Report) error {
	w := &errWriter{w: out}
	multi := multiResource(r)
	if err := writeTabbed(w, tableHeader(multi), tableRows(r)); err != nil {
		return err
	}
	if rows := relistRows(r); len(rows) > 0 {
		_, _ = fmt.Fprintln(w)
		if err := writeTabbed(w, relistHeader(multi), rows); err != nil {
			return err
		}
	}
	if rows := eventsRows(r); len(rows) > 0 {
		_, _ = fmt.Fprintln(w)
		if err := writeTabbed(w, eventsHeader(multi), rows); err != nil {
			return err
		}
	}
	for _, res := range r.Results {
		if res.Error != "" {
			_, _ = fmt.Fprintf(w, "\n%s failed: %s\n", res.Label(), res.Error)
		}
		if l := res.ReconcileList; l != nil && l.Error != "" {
			_, _ = fmt.Fprintf(w, "\n%s reconcile list failed: %s\n", res.Label(), l.Error)
		}
		for _, rl := range res.Relists {
			if rl.Error != "" {
				_, _ = fmt.Fprintf(w, "\n%s re-list %d failed: %s\n", res.Label(), rl.Index, rl.Error)
			}
		}
		for _, e := range eventFailures(res) {
			_, _ = fmt.Fprintf(w, "\n%s failed: %s\n", res.Label(), e)
		}
	}
	for _, note := range r.Skipped {
		_, _ = fmt.Fprintf(w, "\nleft out: %s\n", note)
	}
	_, _ = fmt.Fprintln(w)
	for _, line := range Summary(r) {
		_, _ = fmt.Fprintln(w, line)
	}
	_, _ = fmt.Fprintln(w)
	for _, line := range notes(r) {
		_, _ = fmt.Fprintln(w, line)
	}
	return w.err
}

// notes are the notes of r's tables: the events phase's too when r has one.
func notes(r bench.Report) []string {
	if slices.ContainsFunc(r.Results, func(res bench.Result) bool { return res.Events != nil }) {
		return append(slices.Clone(tableNotes), eventsNotes...)
	}
	return tableNotes
}

// tableNotes say how the columns are measured.
var tableNotes = []string{
	"live MiB and KB/obj after a GC; peaks are the highest heap sampled (live and not yet swept objects) over the live heap after the sync;",
	"probe: lateness of a goroutine sleeping 1 ms; sched: runtime/metrics /sched/latencies; GC CPU % of available CPU during sync and re-lists;",
	"CPU s: the measured process's user+system CPU (getrusage) in the window: the sync to a settle after HasSynced, a re-list from its list request",
	"(sent once the changes were written) to a settle after the last event; µs/obj divides it by the objects cached;",
	"server: the local kube-apiserver and its etcd (one process) in the same window: CPU from /proc/<pid>/stat, the highest RSS sampled every 20 ms,",
	"objects read from etcd / from the watch cache's lists / sent as streaming-list events (apiserver metrics);",
	"changed: objects updated/created/deleted by a direct client between the 410 and the re-list; delivered: the handler's updates/adds/deletes;",
	"unchanged upd: updates beyond the objects changed (client-go sends one per object it holds);",
	"list: a reconcile reading every cached object once, after the idle window, through the mode's reader (client-go and leanstore: the lister;",
	"controller-runtime: the manager's client, which deep-copies each object unless UnsafeDisableDeepCopy): the bytes it allocated",
	"(runtime/metrics /gc/heap/allocs:bytes) per object, and the highest heap while the objects read are held, over the live heap.",
}
