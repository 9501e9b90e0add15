package mutants

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Result is one mutant's row of the table.
type Result struct {
	Mutant Mutant
	Outcome
	Took time.Duration
	// Log is the file that holds the run's output, if kept.
	Log string
}

// Exec runs a command, with the overlay file when overlay is not "", and
// reports whether it passed and its combined output. err is for a command
// that could not be started at all.
type Exec func(ctx context.Context, c Command, overlay string) (passed bool, output string, err error)

// Runner runs mutants: each distinct command once unmutated first (a
// mutant is caught only by a command that passes without it), then each
// mutant planted alone.
type Runner struct {
	// Root is the module root, whose files the mutants name.
	Root string
	// LogDir keeps each run's output (one file per baseline and mutant);
	// "" keeps none.
	LogDir string
	// Exec runs go test (GoTest when nil).
	Exec Exec
	// Progress receives a line per run; nil discards them.
	Progress func(format string, args ...any)
}

// Run runs ms and returns their results, in order. It stops early only when
// ctx ends; the results then hold the mutants run so far, and complete is
// false.
func (r *Runner) Run(ctx context.Context, ms []Mutant) (results []Result, complete bool, err error) {
	run := r.Exec
	if run == nil {
		run = GoTest(r.Root)
	}
	say := r.Progress
	if say == nil {
		say = func(string, ...any) {}
	}
	tmp, err := os.MkdirTemp("", "mutants-")
	if err != nil {
		return nil, false, err
	}
	defer os.RemoveAll(tmp)

	// Baselines: a command that fails unmutated catches nothing.
	baseline := map[string]Outcome{}
	for _, m := range ms {
		k := m.Cmd.Key()
		if _, done := baseline[k]; done {
			continue
		}
		start := time.Now()
		passed, out, err := run(ctx, m.Cmd, "")
		if ctx.Err() != nil {
			return results, false, ctx.Err()
		}
		r.keep(fmt.Sprintf("baseline-%d.log", len(baseline)+1), m.Cmd.String(), out)
		switch {
		case err != nil:
			baseline[k] = Outcome{Verdict: SuiteError, By: "the command could not run: " + err.Error()}
		case !passed:
			o := Classify(false, out)
			baseline[k] = Outcome{Verdict: SuiteError, By: "fails without the mutant (" + o.By + ")"}
		default:
			baseline[k] = Outcome{} // passes: the mutants' runs say
		}
		say("baseline %s: %s (%s)", m.Cmd, verdictOfBaseline(baseline[k]), time.Since(start).Round(time.Second))
	}

	for i, m := range ms {
		res := Result{Mutant: m}
		start := time.Now()
		res.Outcome = r.one(ctx, run, m, filepath.Join(tmp, m.Name), baseline[m.Cmd.Key()], &res)
		if ctx.Err() != nil {
			return results, false, ctx.Err()
		}
		res.Took = time.Since(start)
		results = append(results, res)
		say("[%d/%d] %s: %s %s (%s)", i+1, len(ms), m.Name, res.Verdict, res.By, res.Took.Round(time.Second))
	}
	return results, true, nil
}

func verdictOfBaseline(o Outcome) string {
	if o.Verdict == SuiteError {
		return o.By
	}
	return "passes"
}

// one plants m and runs its command.
func (r *Runner) one(ctx context.Context, run Exec, m Mutant, dir string, base Outcome, res *Result) Outcome {
	if base.Verdict == SuiteError {
		return base
	}
	ov, err := Plant(m, r.Root, dir)
	if err != nil {
		return Outcome{Verdict: SuiteError, By: err.Error()}
	}
	passed, out, err := run(ctx, m.Cmd, ov)
	res.Log = r.keep(m.Name+".log", m.Cmd.String()+" (mutant "+m.Name+")", out)
	if err != nil {
		return Outcome{Verdict: SuiteError, By: "the command could not run: " + err.Error()}
	}
	return ClassifyRun(m.Cmd, passed, out)
}

// keep writes a run's output to LogDir.
func (r *Runner) keep(name, header, out string) string {
	if r.LogDir == "" {
		return ""
	}
	if err := os.MkdirAll(r.LogDir, 0o755); err != nil {
		return ""
	}
	p := filepath.Join(r.LogDir, name)
	if err := os.WriteFile(p, []byte("# "+header+"\n"+out), 0o644); err != nil {
		return ""
	}
	return p
}

// GoTest runs go test in root.
func GoTest(root string) Exec {
	return func(ctx context.Context, c Command, overlay string) (bool, string, error) {
		// go test's own -timeout ends a hung test; this ends a hung build.
		ctx, cancel := context.WithTimeout(ctx, c.Timeout+10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", c.Args(overlay)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), c.Env...)
		cmd.WaitDelay = time.Minute
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return true, out.String(), nil
		case errors.As(err, &exit):
			return false, out.String(), nil
		default:
			return false, out.String(), err
		}
	}
}
