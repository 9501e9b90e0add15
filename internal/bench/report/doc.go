// Package report renders the Report of a cachebench run for people: a table
// and summary sentences for the terminal (WriteTable, Summary), and a
// self-contained HTML page (WriteHTML) whose charts are inline SVG, with
// nothing fetched and nothing run. The measurement and the Report itself are
// the package bench's; this package only reads them.
//
// The guide that uses it: docs/memory.md, whose tables and charts it draws.
//
//	r, err := bench.ReadJSON(f) // a saved run (cachebench.json)
//	if err != nil { ... }
//	if err := report.WriteTable(os.Stdout, r); err != nil { ... }
//	if err := report.WriteHTML(out, r); err != nil { ... }
//
// The golden files under testdata/ pin the output of a fixed Report; `make
// golden` regenerates them when a change is intended.
package report
