package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// section is one table of a report, shared by the terminal table and the
// markdown renderings so that both always show the same figures.
type section struct {
	title  string
	note   string // a line under the title
	header []string
	rows   [][]string
}

// sections lays the report out: resources, projected heap, largest objects,
// stuck objects, churn. Sections without rows are left out, but for stuck
// objects, whose absence is news, and churn, shown when a watch ran.
func sections(r *Report) []section {
	out := []section{resourcesSection(r)}
	if proj := projectionSection(r); len(proj.rows) > 0 {
		out = append(out, proj)
	}
	if big := largestSection(r); len(big.rows) > 0 {
		out = append(out, big)
	}
	out = append(out, stuckSection(r))
	if r.Settings.WatchSeconds > 0 {
		out = append(out, churnSection(r))
	}
	return out
}

func resourcesSection(r *Report) section {
	res := section{title: "Resources", header: []string{"resource", "access", "objects", "JSON KB/obj", "protobuf KB/obj", "managedFields", "last-applied", "LIST first page", "LIST all"}}
	for _, x := range r.Resources {
		row := []string{x.Resource, accessCell(x.Access)}
		if x.List.Pages == 0 {
			row = append(row, "-", "-", "-", "-", "-", "-", "-")
			res.rows = append(res.rows, row)
			continue
		}
		js, pb, mf, la := "-", "-", "-", "-"
		if x.Objects > 0 {
			js, mf, la = fmt.Sprintf("%.1f", x.JSON.PerObject/1000), percent(x.ManagedFields.Share), percent(x.LastApplied.Share)
			if x.Protobuf != nil {
				pb = fmt.Sprintf("%.1f", x.Protobuf.PerObject/1000)
			}
		}
		row = append(row,
			fmt.Sprint(x.Objects),
			js,
			pb,
			mf,
			la,
			seconds(x.List.FirstPageSeconds),
			fmt.Sprintf("%s, %s (%s)", seconds(x.List.AllSeconds), plural(x.List.Pages, "page"), x.List.Format),
		)
		res.rows = append(res.rows, row)
	}
	return res
}

func projectionSection(r *Report) section {
	proj := section{title: "Projected cache heap",
		note:   fmt.Sprintf("from up to %d objects per resource decoded as each informer decodes them; per object: the object, its store key and entry", r.Settings.Sample),
		header: []string{"resource", "mode", "KB/obj", "total MiB", "saving"}}
	for _, x := range r.Resources {
		for i, p := range x.Projections {
			saving := "-"
			if i > 0 {
				saving = percent(p.Saving)
			}
			proj.rows = append(proj.rows, []string{x.Resource, p.Title, fmt.Sprintf("%.1f", p.PerObject/1000),
				fmt.Sprintf("%.1f", float64(p.Total)/(1<<20)), saving})
		}
	}
	return proj
}

func largestSection(r *Report) section {
	big := section{title: "Largest objects", header: []string{"resource", "object", "JSON KB", "managedFields KB", "last-applied KB"}}
	for _, x := range r.Resources {
		for _, o := range x.Largest {
			big.rows = append(big.rows, []string{x.Resource, objectName(o.Namespace, o.Name),
				fmt.Sprintf("%.1f", float64(o.JSON)/1000), fmt.Sprintf("%.1f", float64(o.ManagedFields)/1000), fmt.Sprintf("%.1f", float64(o.LastApplied)/1000)})
		}
	}
	return big
}

func stuckSection(r *Report) section {
	after := time.Duration(r.Settings.StuckAfterSeconds * float64(time.Second))
	st := section{title: "Stuck Terminating", note: fmt.Sprintf("objects Terminating for more than %s", after),
		header: []string{"resource", "object", "Terminating for", "finalizers"}}
	for _, x := range r.Resources {
		for _, s := range x.Stuck {
			fin := strings.Join(s.Finalizers, ", ")
			if fin == "" {
				fin = "(none)"
			}
			st.rows = append(st.rows, []string{x.Resource, objectName(s.Namespace, s.Name), age(s.AgeSeconds), fin})
		}
	}
	if len(st.rows) == 0 {
		st.rows = append(st.rows, []string{"-", "none", "-", "-"})
	}
	return st
}

func churnSection(r *Report) section {
	ch := section{title: "Churn",
		note: fmt.Sprintf("a plain watch of %s per resource; a loop is %d rewrites without a spec change in the window, ping-pong %d turns between two managers",
			time.Duration(r.Settings.WatchSeconds*float64(time.Second)), r.Settings.LoopThreshold, r.Settings.PingPongTurns),
		header: []string{"resource", "updates", "finding", "object", "managers", "count"}}
	for _, x := range r.Resources {
		if x.Churn == nil {
			continue
		}
		updates := classesCell(x.Churn.Updates)
		if x.Churn.Error != "" {
			updates += " (watch ended: " + x.Churn.Error + ")"
		}
		if len(x.Churn.Findings) == 0 {
			ch.rows = append(ch.rows, []string{x.Resource, updates, "none", "-", "-", "-"})
		}
		for _, f := range x.Churn.Findings {
			ch.rows = append(ch.rows, []string{x.Resource, updates, f.Kind, objectName(f.Namespace, f.Name),
				strings.Join(f.Managers, ", "), fmt.Sprint(f.Updates)})
		}
	}
	return ch
}

func accessCell(a Access) string {
	switch {
	case a.List && a.Watch:
		return "list, watch"
	case a.List && !a.Checked:
		return "list (watch not checked)"
	case a.List:
		return "list only: NO WATCH"
	case a.Watch:
		return "FORBIDDEN: no list"
	}
	return "FORBIDDEN"
}

func classesCell(updates map[string]int) string {
	if len(updates) == 0 {
		return "0"
	}
	var parts []string
	for c, n := range updates {
		parts = append(parts, fmt.Sprintf("%s %d", c, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// headline is the report's first line.
func headline(r *Report) string {
	ns := "all namespaces"
	if r.Namespace != "" {
		ns = "namespace " + r.Namespace
	}
	v := ""
	if r.Cluster.ServerVersion != "" {
		v = " (" + r.Cluster.ServerVersion + ")"
	}
	return fmt.Sprintf("cachebench doctor: %s%s, %s, %s", r.Cluster.Host, v, ns, r.Generated.UTC().Format(time.RFC3339))
}

func streamingLine(s Streaming) string {
	line := "streaming lists: " + string(s.Supported)
	switch {
	case s.Resource != "" && s.Detail != "":
		line += fmt.Sprintf(" (tried on %s: %s)", s.Resource, s.Detail)
	case s.Detail != "":
		line += " (" + s.Detail + ")"
	}
	return line
}

// problems are the resources that could not be measured, one line each.
func problems(r *Report) []string {
	var out []string
	for _, x := range r.Resources {
		if x.Error == "" {
			continue
		}
		line := x.Resource + ": " + x.Error
		if x.Access.Reason != "" && !strings.Contains(x.Error, x.Access.Reason) {
			line += " (" + x.Access.Reason + ")"
		}
		out = append(out, line)
	}
	return out
}

func recommendationLines(rec Recommendation) (title string, lines []string) {
	title = fmt.Sprintf("%s, %s: %s", rec.Resource, rec.Symptom, rec.Cause)
	lines = append(lines, "fix: "+rec.Fix)
	switch {
	case rec.Saving > 0 && rec.Peak:
		lines = append(lines, fmt.Sprintf("saves: %s of the peak, at start and at every re-list", mib(rec.Saving)))
	case rec.Saving > 0:
		lines = append(lines, fmt.Sprintf("saves: %s (%s of the client-go cache)", mib(rec.Saving), percent(rec.SavingShare)))
	}
	lines = append(lines, "guide: "+rec.Guide)
	return title, lines
}

// WriteTable writes the report as aligned text tables, for a terminal.
func WriteTable(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintln(&b, headline(r))
	fmt.Fprintln(&b, streamingLine(r.StreamingLists))
	for _, s := range sections(r) {
		fmt.Fprintf(&b, "\n%s\n", strings.ToUpper(s.title))
		if s.note != "" {
			fmt.Fprintf(&b, "(%s)\n", s.note)
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(s.header, "\t"))
		for _, row := range s.rows {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if p := problems(r); len(p) > 0 {
		fmt.Fprintf(&b, "\nNOT MEASURED\n")
		for _, line := range p {
			fmt.Fprintf(&b, "  %s\n", line)
		}
	}
	fmt.Fprintf(&b, "\nRECOMMENDATIONS\n")
	if len(r.Recommendations) == 0 {
		fmt.Fprintln(&b, "none: nothing found worth changing")
	}
	for i, rec := range r.Recommendations {
		title, lines := recommendationLines(rec)
		fmt.Fprintf(&b, "%d. %s\n", i+1, title)
		for _, l := range lines {
			fmt.Fprintf(&b, "   %s\n", l)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the report as markdown, for an issue or a wiki page.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n", mdEscape(headline(r)), mdEscape(streamingLine(r.StreamingLists)))
	for _, s := range sections(r) {
		fmt.Fprintf(&b, "\n## %s\n\n", s.title)
		if s.note != "" {
			fmt.Fprintf(&b, "%s.\n\n", mdEscape(upperFirst(s.note)))
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(s.header, " | "))
		fmt.Fprintf(&b, "|%s\n", strings.Repeat("---|", len(s.header)))
		for _, row := range s.rows {
			cells := make([]string, len(row))
			for i, c := range row {
				cells[i] = mdEscape(c)
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
		}
	}
	if p := problems(r); len(p) > 0 {
		fmt.Fprintf(&b, "\n## Not measured\n\n")
		for _, line := range p {
			fmt.Fprintf(&b, "- %s\n", mdEscape(line))
		}
	}
	fmt.Fprintf(&b, "\n## Recommendations\n\n")
	if len(r.Recommendations) == 0 {
		fmt.Fprintln(&b, "None: nothing found worth changing.")
	}
	for i, rec := range r.Recommendations {
		title, lines := recommendationLines(rec)
		fmt.Fprintf(&b, "%d. **%s**\n", i+1, mdEscape(title))
		for _, l := range lines {
			key, val, _ := strings.Cut(l, ": ")
			if key == "fix" || key == "guide" {
				val = "`" + val + "`"
				if key == "guide" {
					val = fmt.Sprintf("[%s](%s)", strings.TrimPrefix(rec.Guide, "docs/"), rec.Guide)
				}
			} else {
				val = mdEscape(val)
			}
			fmt.Fprintf(&b, "   - %s: %s\n", key, val)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdEscape keeps text from breaking a markdown table or turning into markup.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "<", "&lt;", ">", "&gt;").Replace(s)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ReadJSON reads a report written by WriteJSON.
func ReadJSON(rd io.Reader) (*Report, error) {
	var r Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("read doctor report: %w", err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("read doctor report: schema %q, want %q", r.Schema, Schema)
	}
	return &r, nil
}
