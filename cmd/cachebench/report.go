package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

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
