package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/internal/bench/report"
)

// runReport re-renders a saved run: the table (or JSON) on stdout, and HTML
// on request. It is how a committed reference result is read, and compared by
// eye.
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", `Reads the JSON of a 'cachebench run' (cachebench.json in its --out-dir, or
its -o json), given as the one argument, prints its table and summary, and
with --out-dir writes its HTML report there (cachebench.html).`, stdout, stderr)
	fs.args = "FILE"
	out := fs.withOutput("table", "json")
	outDir := fs.String("out-dir", "", "write the HTML report (cachebench.html) into this directory")
	htmlPath := fs.String("html", "", "write the HTML report to this file")
	fs.deprecated("html", "--out-dir (cachebench.html in it)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if len(fs.positional) != 1 {
		return usageError{errors.New("give exactly one JSON file of a run")}
	}
	path := fs.positional[0]
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := bench.ReadJSON(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	write := report.WriteTable
	if out.value == "json" {
		write = bench.WriteJSON
	}
	if err := write(stdout, r); err != nil {
		return err
	}
	if *outDir != "" {
		if err := os.MkdirAll(*outDir, 0o755); err != nil {
			return err
		}
		if err := writeHTMLFile(filepath.Join(*outDir, "cachebench.html"), r, stderr); err != nil {
			return err
		}
	}
	if *htmlPath != "" {
		return writeHTMLFile(*htmlPath, r, stderr)
	}
	return nil
}

func writeHTMLFile(path string, r bench.Report, stderr io.Writer) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteHTML(out, r); err != nil {
		out.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s\n", path)
	return nil
}

// writeReports saves the report as JSON and HTML in --out-dir, and in the
// deprecated --json and --html when given ("-" is stdout).
func (o *runOptions) writeReports(r bench.Report, stdout, stderr io.Writer) error {
	write := func(path string, f func(io.Writer, bench.Report) error) error {
		if path == "-" {
			return f(stdout, r)
		}
		file, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := f(file, r); err != nil {
			file.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := file.Close(); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", path)
		return nil
	}
	paths := []struct {
		path string
		f    func(io.Writer, bench.Report) error
	}{
		{filepath.Join(o.OutDir, "cachebench.json"), bench.WriteJSON},
		{filepath.Join(o.OutDir, "cachebench.html"), report.WriteHTML},
		{o.jsonPath, bench.WriteJSON},
		{o.htmlPath, report.WriteHTML},
	}
	for _, p := range paths {
		if p.path == "" {
			continue
		}
		if err := write(p.path, p.f); err != nil {
			return err
		}
	}
	return nil
}
