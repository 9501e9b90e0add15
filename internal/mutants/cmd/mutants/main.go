// Command mutants runs the planted-defect suite of package mutants:
//
//	go run ./internal/mutants/cmd/mutants -out out/mutants.md -results bench/results/mutants.md
//
// -only name1,name2 runs some mutants; -check only plants and compiles
// each (no tests). The table is written to -out, and to -results only when
// every mutant of the catalog ran. The exit status is 0 when every mutant
// ran and was caught, 1 when one was missed or could not say (a suite
// error), 2 when the run could not be made.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/cachetune/cachetune/internal/mutants"
)

func main() {
	os.Exit(run())
}

func run() int {
	only := flag.String("only", "", "comma-separated mutant names (default: all)")
	out := flag.String("out", "out/mutants.md", "the table")
	results := flag.String("results", "", "where to copy the table when every mutant of the catalog ran")
	logs := flag.String("logs", "out/mutants", "directory for each run's output")
	check := flag.Bool("check", false, "only plant and compile each mutant")
	flag.Parse()

	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var names []string
	if *only != "" {
		names = strings.Split(*only, ",")
	}
	ms, err := mutants.Select(mutants.Catalog, names)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *check {
		return compileAll(ctx, root, ms)
	}

	r := &mutants.Runner{Root: root, LogDir: *logs, Progress: func(format string, args ...any) {
		fmt.Printf(time.Now().UTC().Format("15:04:05 ")+format+"\n", args...)
	}}
	start := time.Now()
	res, complete, runErr := r.Run(ctx, ms)
	full := complete && len(ms) == len(mutants.Catalog)
	header := []string{
		"Written by `make mutants` (go run ./internal/mutants/cmd/mutants); the catalog, with why each defect is plausible, is internal/mutants/catalog.go.",
		"Each mutant is planted alone through go test's -overlay (the working tree is never changed) and its command run once; each command first passes without any mutant.",
		fmt.Sprintf("Run of %s, %s in all (build included), on %s.", time.Now().UTC().Format("2006-01-02"), time.Since(start).Round(time.Second), goVersion()),
	}
	table := mutants.Table(res, full, header)
	if err := writeFile(*out, table); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Print(table)
	if runErr != nil {
		fmt.Fprintln(os.Stderr, "stopped:", runErr)
		return 2
	}
	if full && *results != "" {
		if err := writeFile(*results, table); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println("table written to", *results)
	} else if *results != "" {
		fmt.Println(*results, "left as it was: not every mutant of the catalog ran")
	}
	for _, x := range res {
		if x.Verdict != mutants.Caught {
			return 1
		}
	}
	return 0
}

// compileAll plants each mutant and builds the package it changes.
func compileAll(ctx context.Context, root string, ms []mutants.Mutant) int {
	tmp, err := os.MkdirTemp("", "mutants-check-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(tmp)
	bad := 0
	for _, m := range ms {
		ov, err := mutants.Plant(m, root, filepath.Join(tmp, m.Name))
		if err == nil {
			pkgs := map[string]bool{}
			for _, e := range m.Edits {
				pkgs["./"+filepath.ToSlash(filepath.Dir(e.File))+"/"] = true
			}
			for p := range pkgs {
				cmd := exec.CommandContext(ctx, "go", "build", "-overlay", ov, p)
				cmd.Dir = root
				if b, e := cmd.CombinedOutput(); e != nil {
					err = fmt.Errorf("%s does not build: %s", p, strings.TrimSpace(string(b)))
				}
			}
		}
		if err != nil {
			bad++
			fmt.Printf("%s: %v\n", m.Name, err)
			continue
		}
		fmt.Printf("%s: plants and builds\n", m.Name)
	}
	if bad > 0 {
		return 1
	}
	return 0
}

func moduleRoot() (string, error) {
	b, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(b))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside a Go module")
	}
	return filepath.Dir(mod), nil
}

func goVersion() string {
	b, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "go"
	}
	return strings.TrimSpace(string(b))
}

func writeFile(path, s string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
