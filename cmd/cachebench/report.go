package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/internal/bench/report"
)

// runReport re-renders a saved run: the table on stdout, and HTML on request.
// It is how a committed reference result is read, and compared by eye.
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", `Reads the JSON of a 'cachebench run' (--json, or cachebench.json in its --out
directory), given as the one argument, prints its table and summary, and writes
its HTML report with --html.`, stderr)
	htmlPath := fs.String("html", "", "write the HTML report to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() != 1 {
		return usageError{errors.New("give exactly one JSON file of a run")}
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := bench.ReadJSON(f)
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	if err := report.WriteTable(stdout, r); err != nil {
		return err
	}
	if *htmlPath == "" {
		return nil
	}
	out, err := os.Create(*htmlPath)
	if err != nil {
		return err
	}
	if err := report.WriteHTML(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// writeReports saves the report as JSON and HTML in --out, and in --json and
// --html when given ("-" is stdout).
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
