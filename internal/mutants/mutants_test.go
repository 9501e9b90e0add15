package mutants

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMutateReplacesASnippetFoundOnce(t *testing.T) {
	src := "a := 1\nb := 2\nc := 1\n"
	got, err := Mutate(src, []Edit{{File: "f.go", Old: "b := 2", New: "b := 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "a := 1\nb := 3\nc := 1\n"; got != want {
		t.Errorf("mutated %q, want %q", got, want)
	}
	for _, tc := range []struct {
		old, wantErr string
	}{
		{"d := 4", "not there"},
		{":= 1", "occurs 2 times"},
	} {
		if _, err := Mutate(src, []Edit{{File: "f.go", Old: tc.old, New: "x"}}); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("snippet %q: error %v, want one saying %q", tc.old, err, tc.wantErr)
		}
	}
}

// Plant writes the mutated copies and an overlay mapping the real files to
// them, and leaves the real files as they were.
func TestPlantWritesAnOverlayAndLeavesTheTreeAlone(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{"a/x.go": "package a\n\nconst X = 1\n", "b/x.go": "package b\n\nconst Y = 2\n"}
	for f, src := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := Mutant{Name: "m", Edits: []Edit{
		{File: "a/x.go", Old: "X = 1", New: "X = 10"},
		{File: "b/x.go", Old: "Y = 2", New: "Y = 20"},
	}}
	ovPath, err := Plant(m, root, filepath.Join(t.TempDir(), "m"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ovPath)
	if err != nil {
		t.Fatal(err)
	}
	var ov struct{ Replace map[string]string }
	if err := json.Unmarshal(b, &ov); err != nil {
		t.Fatal(err)
	}
	if len(ov.Replace) != 2 {
		t.Fatalf("overlay %s, want the two files", b)
	}
	for f, src := range files {
		real := filepath.Join(root, f)
		copyPath, ok := ov.Replace[real]
		if !ok {
			t.Fatalf("overlay %s does not replace %s", b, real)
		}
		got, err := os.ReadFile(copyPath)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(strings.Replace(src, "X = 1", "X = 10", 1), "Y = 2", "Y = 20", 1)
		if string(got) != want {
			t.Errorf("copy of %s is %q, want %q", f, got, want)
		}
		if now, _ := os.ReadFile(real); string(now) != src {
			t.Errorf("%s changed to %q", f, now)
		}
	}
	if _, err := Plant(Mutant{Name: "moved", Edits: []Edit{{File: "a/x.go", Old: "X = 2", New: "X = 3"}}}, root, t.TempDir()); err == nil {
		t.Error("a mutant whose snippet is not there planted without error")
	}
}

// The overlay really changes what go test builds: a mutated constant makes
// a passing test fail, and the same test passes without the overlay.
func TestOverlayReachesGoTest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	root := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.22\n")
	write("m.go", "package m\n\nfunc Two() int { return 1 + 1 }\n")
	write("m_test.go", "package m\n\nimport \"testing\"\n\nfunc TestTwo(t *testing.T) {\n\tif Two() != 2 {\n\t\tt.Fatal(\"not two\")\n\t}\n}\n")
	cmd := Command{Pkg: ".", Run: "^TestTwo$", Timeout: time.Minute}
	r := &Runner{Root: root}
	cmd2 := cmd
	cmd2.Run = "^TestTwo$|^TestNone$" // a second command, to show each gets its baseline
	ms := []Mutant{
		{Name: "plus-to-minus", Edits: []Edit{{File: "m.go", Old: "1 + 1", New: "1 - 1"}}, Cmd: cmd},
		{Name: "same-value", Edits: []Edit{{File: "m.go", Old: "1 + 1", New: "2 * 1"}}, Cmd: cmd},
		{Name: "does-not-build", Edits: []Edit{{File: "m.go", Old: "1 + 1", New: "1 + nothing"}}, Cmd: cmd2},
		{Name: "moved", Edits: []Edit{{File: "m.go", Old: "3 + 3", New: "1"}}, Cmd: cmd2},
	}
	res, complete, err := r.Run(context.Background(), ms)
	if err != nil || !complete {
		t.Fatalf("run: complete %v, %v", complete, err)
	}
	want := []Verdict{Caught, Missed, SuiteError, SuiteError}
	for i, x := range res {
		if x.Verdict != want[i] {
			t.Errorf("%s: %s (%s), want %s", x.Mutant.Name, x.Verdict, x.By, want[i])
		}
	}
	if res[0].By != "TestTwo" {
		t.Errorf("caught by %q, want TestTwo", res[0].By)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "m.go")); !strings.Contains(string(b), "1 + 1") {
		t.Errorf("the tree was changed: %s", b)
	}
}

// A command that fails without any mutant catches nothing: its mutants are
// suite errors, and their mutated runs are not even made.
func TestFailingBaselineIsASuiteError(t *testing.T) {
	good := Command{Pkg: "./good", Run: "X", Timeout: time.Minute}
	bad := Command{Pkg: "./bad", Run: "X", Timeout: time.Minute}
	var runs []string
	exec := func(_ context.Context, c Command, overlay string) (bool, string, error) {
		runs = append(runs, c.Pkg+" "+map[bool]string{true: "mutated", false: "baseline"}[overlay != ""])
		switch {
		case c.Pkg == "./bad" && overlay == "":
			return false, "--- FAIL: TestX (0.01s)\nFAIL\nFAIL\texample.com/bad\t0.1s\n", nil
		case overlay == "":
			return true, "ok\n", nil
		}
		return false, "--- FAIL: TestX (0.01s)\nFAIL\n", nil
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.go"), []byte("package f\nconst A = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	edit := []Edit{{File: "f.go", Old: "A = 1", New: "A = 2"}}
	r := &Runner{Root: root, Exec: exec}
	res, complete, err := r.Run(context.Background(), []Mutant{
		{Name: "g1", Edits: edit, Cmd: good},
		{Name: "b1", Edits: edit, Cmd: bad},
		{Name: "g2", Edits: edit, Cmd: good},
	})
	if err != nil || !complete {
		t.Fatalf("run: complete %v, %v", complete, err)
	}
	if got, want := strings.Join(runs, ","), "./good baseline,./bad baseline,./good mutated,./good mutated"; got != want {
		t.Errorf("runs %s, want %s (one baseline per command, none mutated for a failing baseline)", got, want)
	}
	if res[1].Verdict != SuiteError || !strings.Contains(res[1].By, "fails without the mutant") {
		t.Errorf("mutant of a failing command: %s (%s), want a suite error", res[1].Verdict, res[1].By)
	}
	if res[0].Verdict != Caught || res[2].Verdict != Caught {
		t.Errorf("mutants of a passing command: %s, %s, want caught", res[0].Verdict, res[2].Verdict)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name   string
		passed bool
		out    string
		want   Outcome
	}{
		{"passed", true, "ok  \texample.com/m\t0.1s\n", Outcome{Verdict: Missed}},
		{"a failing subtest", false, "--- FAIL: TestConformance (30.1s)\n    --- FAIL: TestConformance/seed-3 (30.1s)\n        x_test.go:1: content differs\nFAIL\nFAIL\texample.com/c\t31s\n",
			Outcome{Verdict: Caught, By: "TestConformance/seed-3"}},
		{"two tests", false, "--- FAIL: TestA (0.1s)\n--- FAIL: TestB (0.1s)\nFAIL\n", Outcome{Verdict: Caught, By: "TestA, TestB"}},
		{"build failed", false, "# example.com/m\n/tmp/x/m.go:3:22: undefined: nothing\nFAIL\texample.com/m [build failed]\n",
			Outcome{Verdict: SuiteError, By: "does not build: /tmp/x/m.go:3:22: undefined: nothing"}},
		{"time-out", false, "panic: test timed out after 15m0s\n\trunning tests:\n\t\tTestConformance (15m0s)\n\t\tTestConformance/seed-3 (15m0s)\n\ngoroutine 1 [running]:\nFAIL\texample.com/c\t900s\n",
			Outcome{Verdict: Caught, By: "time-out after 15m0s in TestConformance/seed-3"}},
		{"panic", false, "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 7 [running]:\nFAIL\texample.com/c\t1s\n",
			Outcome{Verdict: Caught, By: "panic: runtime error: index out of range [3] with length 3"}},
		{"TestMain failed", false, "the API server did not start\nFAIL\texample.com/c\t1s\n", Outcome{Verdict: Caught, By: "the test binary failed: FAIL\texample.com/c\t1s"}},
		{"go itself failed", false, "go: -overlay: open x.json: no such file or directory\n", Outcome{Verdict: SuiteError, By: "go test failed without a test failure: go: -overlay: open x.json: no such file or directory"}},
	} {
		if got := Classify(tc.passed, tc.out); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// Every mutant of the catalog applies to the current code: each snippet is
// there exactly once, each mutant has a command, and names are unique. A
// mutant that does not compile is caught by `make mutants` (a suite error)
// and by go run ./internal/mutants/cmd/mutants -check, which make test runs.
func TestCatalogApplies(t *testing.T) {
	root := moduleRoot(t)
	names := map[string]bool{}
	for _, m := range Catalog {
		if names[m.Name] {
			t.Errorf("two mutants named %s", m.Name)
		}
		names[m.Name] = true
		if m.Where == "" || m.Breaks == "" || m.Cmd.Pkg == "" || m.Cmd.Run == "" || m.Cmd.Timeout == 0 {
			t.Errorf("%s: where, what it breaks and a command with a time-out are required", m.Name)
		}
		if _, err := Plant(m, root, t.TempDir()); err != nil {
			t.Errorf("%s: %v", m.Name, err)
		}
	}
	if len(Catalog) < 12 {
		t.Errorf("%d mutants, want at least 12", len(Catalog))
	}
	if _, err := Select(Catalog, []string{Catalog[0].Name, "no-such-mutant"}); err == nil || !strings.Contains(err.Error(), "no-such-mutant") {
		t.Errorf("selecting an unknown mutant: %v", err)
	}
	if got, err := Select(Catalog, []string{Catalog[1].Name, Catalog[0].Name}); err != nil || len(got) != 2 || got[0].Name != Catalog[0].Name {
		t.Errorf("selecting two mutants: %v %v, want both in catalog order", got, err)
	}
}

func TestTable(t *testing.T) {
	m := Mutant{Name: "m1", Where: "a.go: F", Breaks: "x | y", Cmd: Command{Pkg: "./p/", Run: "^T$|^U$", Env: []string{"A=1"}, Timeout: time.Minute}}
	res := []Result{
		{Mutant: m, Outcome: Outcome{Verdict: Caught, By: "T"}, Took: 61500 * time.Millisecond},
		{Mutant: m, Outcome: Outcome{Verdict: Missed}, Took: time.Second},
	}
	got := Table(res, false, []string{"header"})
	for _, want := range []string{
		"header\n",
		"2 mutants: 1 caught, 1 missed, 0 suite errors; 1m3s of mutant runs (a partial run",
		"| m1 | a.go: F | x \\| y | `A=1 go test -run '^T$\\|^U$' ./p/` | caught | T | 1m2s |",
		"| missed |  | 1s |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(Table(res, true, nil), "partial") {
		t.Error("a complete run's table says partial")
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	b, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(b)))
}

func TestClassifyRunAddsTheFirstFailedCheck(t *testing.T) {
	out := "--- FAIL: TestConformance (30s)\n    --- FAIL: TestConformance/seed-3 (30s)\n" +
		"        phase.go:186: seed 3 step 1 (watch-410): 27 objects\n" +
		"        conformance_test.go:102: seed 3: FAILED (9)\n" +
		"        conformance_test.go:109: step 3 (truncated-at-an-item): leanstore/typed/stream-off: 1 missing\n" +
		"        conformance_test.go:109: step 4 (watch-cut): leanstore/typed/stream-off: 1 missing\nFAIL\n"
	got := ClassifyRun(harness, false, out)
	want := Outcome{Verdict: Caught, By: "TestConformance/seed-3: step 3 (truncated-at-an-item): leanstore/typed/stream-off: 1 missing"}
	if got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
	events := "--- FAIL: TestConformance/seed-3 (30s)\n        conformance_test.go:104: expected of client-go: stalled\n" +
		"        conformance_test.go:109: leanstore/typed/stream-auto: events: delete of ns/p-0011 at resourceVersion 223\nFAIL\n"
	if got := ClassifyRun(harness, false, events); got.By != "TestConformance/seed-3: leanstore/typed/stream-auto: events: delete of ns/p-0011 at resourceVersion 223" {
		t.Errorf("a failed check of the event streams: %+v", got)
	}
	shard := "--- FAIL: TestShardUnion (60s)\n    shard_test.go:30: 2267 writes during the rebalances\n" +
		"    shard_test.go:33: a listed 5 times for 2 rebalances, want at most 3\nFAIL\n"
	if got := ClassifyRun(shardUnion, false, shard); got.By != "TestShardUnion: a listed 5 times for 2 rebalances, want at most 3" {
		t.Errorf("a failed check of the sharding program: %+v", got)
	}
	if got := ClassifyRun(harness, true, out); got.Verdict != Missed || got.By != "" {
		t.Errorf("a passing run: %+v, want missed", got)
	}
}
