// Package mutants plants defects in pkg/leanstore one at a time and runs the
// tests that should catch each: `make mutants`. A suite of tests proves
// something only if it fails when the code is wrong; each mutant here is a
// plausible bug (a wrong field number, an inverted comparison, a forgotten
// line) and the command whose tests must fail on it.
//
// A mutant is planted through Go's build overlay (go test -overlay): the
// mutated copy of the file is written to a temporary directory and the
// overlay maps the real file to it, so the working tree is never changed and
// nothing can be left mutated, whatever happens to the run.
package mutants

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Mutant is one planted defect.
type Mutant struct {
	// Name identifies the mutant (MUTANTS=name1,name2 runs some).
	Name string
	// Where is the file and function it changes, for the table.
	Where string
	// Breaks says what the defect breaks, in a user's terms.
	Breaks string
	// Edits are the changes, applied together. Each edit's Old must occur
	// exactly once in its file: when it does not, the code moved and the
	// mutant must be updated (a suite error, never a catch).
	Edits []Edit
	// Cmd is the test command that should catch it.
	Cmd Command
}

// Edit replaces Old by New in File, a path relative to the module root.
type Edit struct {
	File, Old, New string
}

// Command is a go test run: Pkg's tests matching Run, with Env added to the
// environment, for at most Timeout.
type Command struct {
	Pkg   string
	Run   string
	Short bool // -short: the package's tests that need no API server
	Race  bool // -race: the defect is a data race, which the race detector reports
	Env   []string
	// Timeout bounds the run (go test -timeout): a mutant that makes the
	// tests hang is caught by it.
	Timeout time.Duration
	// Reason is a regular expression whose first group, in a failing run's
	// output, is the first failed check, for the table (the test's own log
	// lines cannot be told from its errors in go test's output); "" shows
	// the failing tests only.
	Reason string
}

// Args are go's arguments for the command, with overlay ("" for none).
func (c Command) Args(overlay string) []string {
	args := []string{"test", "-count=1", "-vet=off", "-timeout", c.Timeout.String()}
	if c.Short {
		args = append(args, "-short")
	}
	if c.Race {
		args = append(args, "-race")
	}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	return append(args, "-run", c.Run, c.Pkg)
}

// String is the command as a user would type it (without the overlay).
func (c Command) String() string {
	var b strings.Builder
	for _, e := range c.Env {
		b.WriteString(e + " ")
	}
	b.WriteString("go test")
	if c.Short {
		b.WriteString(" -short")
	}
	if c.Race {
		b.WriteString(" -race")
	}
	fmt.Fprintf(&b, " -run '%s' %s", c.Run, c.Pkg)
	return b.String()
}

// Key identifies the command for its baseline run.
func (c Command) Key() string { return c.String() + " " + c.Timeout.String() }

// Select returns the mutants named in names (all when names is empty), in
// catalog order, or an error naming those the catalog does not have.
func Select(catalog []Mutant, names []string) ([]Mutant, error) {
	if len(names) == 0 {
		return catalog, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	var out []Mutant
	for _, m := range catalog {
		if want[m.Name] {
			out = append(out, m)
			delete(want, m.Name)
		}
	}
	if len(want) > 0 {
		var unknown []string
		for n := range want {
			unknown = append(unknown, n)
		}
		sort.Strings(unknown)
		return nil, fmt.Errorf("no mutant named %s", strings.Join(unknown, ", "))
	}
	return out, nil
}
