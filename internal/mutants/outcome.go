package mutants

import (
	"regexp"
	"strings"
)

// Verdict is what one run of a command says about a mutant.
type Verdict string

const (
	// Caught: the tests failed (and the same command passes unmutated).
	Caught Verdict = "caught"
	// Missed: the tests passed with the defect planted.
	Missed Verdict = "missed"
	// SuiteError: the run says nothing of the mutant: it did not compile,
	// its snippet was not found, the unmutated command failed, or go test
	// could not start.
	SuiteError Verdict = "suite error"
)

// Outcome is the classification of one go test run.
type Outcome struct {
	Verdict Verdict
	// By names the failing tests (caught), or why the run says nothing
	// (suite error).
	By string
}

var (
	failLine     = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
	timeoutLine  = regexp.MustCompile(`(?m)^panic: test timed out after (\S+)`)
	runningLine  = regexp.MustCompile(`(?m)^\s+(Test\S*) \(\S+\)$`)
	compileError = regexp.MustCompile(`^\S+\.go:\d+:\d+: |\[(build|setup) failed\]`)
	panicLine    = regexp.MustCompile(`(?m)^panic: (.*)$`)
)

// ClassifyRun is Classify, with the first failed check that the command's
// Reason finds in a caught run's output added to By.
func ClassifyRun(c Command, passed bool, output string) Outcome {
	o := Classify(passed, output)
	if o.Verdict != Caught || c.Reason == "" {
		return o
	}
	re, err := regexp.Compile(c.Reason)
	if err != nil {
		return o
	}
	if m := re.FindStringSubmatch(output); len(m) > 1 {
		why := strings.TrimSpace(m[1])
		if len(why) > maxReason {
			why = why[:maxReason] + "..."
		}
		o.By += ": " + why
	}
	return o
}

// maxReason bounds the reason shown in the table.
const maxReason = 220

// Classify reads a go test run's exit (passed: exit status 0) and combined
// output. A failure to build is a suite error, never a catch: a mutant that
// does not compile proves nothing of the tests.
func Classify(passed bool, output string) Outcome {
	if passed {
		return Outcome{Verdict: Missed}
	}
	if strings.Contains(output, "[build failed]") || strings.Contains(output, "[setup failed]") {
		return Outcome{Verdict: SuiteError, By: "does not build: " + firstMatchLine(output, compileError)}
	}
	if m := timeoutLine.FindStringSubmatch(output); m != nil {
		by := "time-out after " + m[1]
		if r := runningLine.FindAllStringSubmatch(output, -1); len(r) > 0 {
			names := make([]string, 0, len(r))
			for _, x := range r {
				names = append(names, x[1])
			}
			by += " in " + strings.Join(deepest(names), ", ")
		}
		return Outcome{Verdict: Caught, By: by}
	}
	if m := failLine.FindAllStringSubmatch(output, -1); len(m) > 0 {
		names := make([]string, 0, len(m))
		for _, x := range m {
			names = append(names, x[1])
		}
		return Outcome{Verdict: Caught, By: strings.Join(deepest(names), ", ")}
	}
	if m := panicLine.FindStringSubmatch(output); m != nil {
		return Outcome{Verdict: Caught, By: "panic: " + m[1]}
	}
	if strings.Contains(output, "\nFAIL\t") || strings.HasPrefix(output, "FAIL\t") {
		// TestMain failed, or a test binary exited without a test's
		// failure line (os.Exit, a crash in a goroutine of the server).
		return Outcome{Verdict: Caught, By: "the test binary failed: " + lastFailLine(output)}
	}
	return Outcome{Verdict: SuiteError, By: "go test failed without a test failure: " + lastLines(output, 3)}
}

// deepest keeps the most specific of nested test names: TestA/sub rather
// than TestA as well; duplicates are dropped, the order kept.
func deepest(names []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		parent := false
		for _, o := range names {
			if strings.HasPrefix(o, n+"/") {
				parent = true
				break
			}
		}
		if !parent {
			out = append(out, n)
		}
	}
	return out
}

func firstMatchLine(output string, re *regexp.Regexp) string {
	for _, l := range strings.Split(output, "\n") {
		if re.MatchString(l) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

func lastFailLine(output string) string {
	lines := strings.Split(strings.TrimSpace(output), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "FAIL") {
			return strings.TrimSpace(lines[i])
		}
	}
	return lastLines(output, 1)
}

func lastLines(output string, n int) string {
	lines := strings.Split(strings.TrimSpace(output), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
