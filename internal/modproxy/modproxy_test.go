package modproxy

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeFiles writes files (slash paths relative to dir) with their content.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func run(t *testing.T, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr)
	}
	return out
}

// checkout is a git repository with a root module, a nested module, an
// ignored file, a new file git does not track yet, and a symbolic link.
func checkout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		".gitignore":             "/ignored.txt\n",
		"go.mod":                 "module example.com/m\n\ngo 1.26.0\n",
		"m.go":                   "package m\n\nconst Name = \"m\"\n",
		"sub/sub.go":             "package sub\n",
		"sub/testdata/data.txt":  "data\n",
		"ignored.txt":            "not published\n",
		"nested/go.mod":          "module example.com/m/nested\n\ngo 1.26.0\n",
		"nested/nested.go":       "package nested\n",
		"nested/inner/inner.go":  "package inner\n",
		"nestedtoo/go.mod":       "module example.com/m/nestedtoo\n\ngo 1.26.0\n",
		"nestedtoo/nestedtoo.go": "package nestedtoo\n",
	})
	git := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	run(t, dir, git, "git", "init", "-q")
	run(t, dir, git, "git", "add", ".")
	run(t, dir, git, "git", "commit", "-q", "-m", "first")
	// After the commit: a file git does not track yet but would add, and a
	// symbolic link (as bin/ is in a worktree), which no module zip holds.
	writeFiles(t, dir, map[string]string{"new.go": "package m\n"})
	if err := os.Symlink(filepath.Join(dir, "sub"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestFiles(t *testing.T) {
	dir := checkout(t)
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{dir, []string{".gitignore", "go.mod", "m.go", "new.go", "sub/sub.go", "sub/testdata/data.txt"}},
		{filepath.Join(dir, "nested"), []string{"go.mod", "inner/inner.go", "nested.go"}},
	} {
		got, err := Files(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Files(%s) (-want +got):\n%s", tc.dir, diff)
		}
	}
	if _, err := Files(t.TempDir()); err == nil {
		t.Error("Files of a directory outside git: want an error")
	}
}

// The published modules download with the go command itself, from the proxy
// directory alone, into a module cache of their own: the root without its
// nested module's files, the nested module on its own.
func TestGoCommandDownloadsWhatPublishWrote(t *testing.T) {
	dir := checkout(t)
	proxy := t.TempDir()
	for _, m := range []Module{
		{Path: "example.com/m", Version: "v0.3.0", Dir: dir},
		{Path: "example.com/m/nested", Version: "v0.3.0", Dir: filepath.Join(dir, "nested")},
		{Path: "example.com/m", Version: "v0.3.1", Dir: dir},
	} {
		if err := Publish(proxy, m); err != nil {
			t.Fatal(err)
		}
	}
	list, err := os.ReadFile(filepath.Join(proxy, "example.com", "m", "@v", "list"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(list)); !slices.Equal(got, []string{"v0.3.0", "v0.3.1"}) {
		t.Errorf("list = %q, want both versions once", got)
	}

	env := []string{
		"GOPROXY=file://" + filepath.ToSlash(proxy), "GONOSUMDB=example.com", "GOFLAGS=-modcacherw",
		"GOMODCACHE=" + t.TempDir(), "GOWORK=off", "GOTOOLCHAIN=local",
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"example.com/m@v0.3.0", []string{".gitignore", "go.mod", "m.go", "new.go", "sub/sub.go", "sub/testdata/data.txt"}},
		{"example.com/m/nested@v0.3.0", []string{"go.mod", "inner/inner.go", "nested.go"}},
	} {
		var got struct{ Dir, Version, Error string }
		if err := json.Unmarshal(run(t, t.TempDir(), env, "go", "mod", "download", "-json", tc.query), &got); err != nil {
			t.Fatal(err)
		}
		if got.Error != "" {
			t.Fatalf("go mod download %s: %s", tc.query, got.Error)
		}
		var files []string
		err := filepath.WalkDir(got.Dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(got.Dir, p)
				files = append(files, filepath.ToSlash(rel))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, files); diff != "" {
			t.Errorf("go mod download %s: files (-want +got):\n%s", tc.query, diff)
		}
	}
}

func TestPublishRejects(t *testing.T) {
	dir := checkout(t)
	for _, m := range []Module{
		{Path: "example.com/other", Version: "v0.1.0", Dir: dir},
		{Path: "example.com/m", Version: "0.1.0", Dir: dir},
		{Path: "example.com/m", Version: "v2.0.0", Dir: dir},
		{Path: "example.com/m", Version: "v0.1.0", Dir: t.TempDir()},
	} {
		if err := Publish(t.TempDir(), m); err == nil {
			t.Errorf("Publish(%+v): want an error", m)
		}
	}
}

func TestEscapePath(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/cachetune/cachetune": "github.com/cachetune/cachetune",
		"github.com/Azure/go-ansiterm":   "github.com/!azure/go-ansiterm",
	} {
		if got, err := EscapePath(in); err != nil || got != want {
			t.Errorf("EscapePath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := EscapePath("example.com/a!b"); err == nil {
		t.Error(`EscapePath with "!": want an error`)
	}
}
