// Package modproxy writes Go modules of a checkout into a directory laid out
// as a module proxy (GOPROXY=file://DIR), at a version that is not tagged
// yet: what a tag would publish, served before it exists. The release check
// (internal/releasecheck) builds another module against it, with no replace
// directive, to prove that the modules install as a user installs them.
//
// A module's zip holds the files git knows in its directory (tracked, or new
// and not ignored; their content as it is on disk), minus those of nested
// modules, as the go command's own zip of a tagged commit does. The layout is
// the go command's (go help goproxy): PATH/@v/list, VERSION.info,
// VERSION.mod and VERSION.zip, with the module path case-escaped.
package modproxy

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Module is one module of a checkout to publish.
type Module struct {
	// Path is the module path, as its go.mod's module line says.
	Path string
	// Version is the version to publish it at, a semantic version such as
	// v0.1.0.
	Version string
	// Dir is the module's directory: the one that holds its go.mod.
	Dir string
	// Time is the version's time in the .info file (the zero value means
	// now): the go command shows it and orders pseudo-versions by it.
	Time time.Time
}

// Publish writes m into the proxy directory dir: its go.mod, its zip and
// its .info, and adds its version to the module's list.
func Publish(dir string, m Module) error {
	if !strings.HasPrefix(m.Version, "v") || strings.ContainsAny(m.Version, "/ ") {
		return fmt.Errorf("modproxy: module %s: version %q is not a semantic version", m.Path, m.Version)
	}
	if major, _, _ := strings.Cut(strings.TrimPrefix(m.Version, "v"), "."); major != "0" && major != "1" && !strings.HasSuffix(m.Path, "/v"+major) {
		return fmt.Errorf("modproxy: module %s: version %s needs the module path to end in /v%s", m.Path, m.Version, major)
	}
	gomod, err := os.ReadFile(filepath.Join(m.Dir, "go.mod"))
	if err != nil {
		return fmt.Errorf("modproxy: module %s: %w", m.Path, err)
	}
	if got := modulePath(gomod); got != m.Path {
		return fmt.Errorf("modproxy: %s/go.mod declares module %q, not %q", m.Dir, got, m.Path)
	}
	files, err := Files(m.Dir)
	if err != nil {
		return fmt.Errorf("modproxy: module %s: %w", m.Path, err)
	}
	esc, err := EscapePath(m.Path)
	if err != nil {
		return err
	}
	vdir := filepath.Join(dir, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	var zbuf bytes.Buffer
	if err := writeZip(&zbuf, m, files); err != nil {
		return fmt.Errorf("modproxy: zip module %s: %w", m.Path, err)
	}
	t := m.Time
	if t.IsZero() {
		t = time.Now()
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, t.UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	for name, content := range map[string][]byte{
		m.Version + ".mod":  gomod,
		m.Version + ".zip":  zbuf.Bytes(),
		m.Version + ".info": info,
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), content, 0o644); err != nil {
			return err
		}
	}
	return addToList(filepath.Join(vdir, "list"), m.Version)
}

// Files lists the files of the module in dir, as slash-separated paths
// relative to it, sorted: the files git knows there (tracked, or untracked
// and not ignored) that exist as regular files, without those under a
// subdirectory that holds a go.mod of its own (a nested module, published
// on its own) or a .git directory.
func Files(dir string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("list the files of %s with git (the release check needs a git checkout): %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	var files []string
	nested := map[string]bool{} // directory -> holds a go.mod of its own
	isNested := func(rel string) bool {
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			is, seen := nested[d]
			if !seen {
				_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(d), "go.mod"))
				is = err == nil
				nested[d] = is
			}
			if is {
				return true
			}
		}
		return false
	}
	for rel := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if rel == "" || isNested(rel) || slices.Contains(strings.Split(rel, "/"), ".git") {
			continue
		}
		// A deleted file git still tracks, or a symbolic link (the go
		// command's zips hold regular files only).
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		files = append(files, rel)
	}
	slices.Sort(files)
	files = slices.Compact(files)
	if !slices.Contains(files, "go.mod") {
		return nil, fmt.Errorf("%s: git knows no go.mod there", dir)
	}
	return files, nil
}

// writeZip writes the module zip: every file under PATH@VERSION/.
func writeZip(w io.Writer, m Module, files []string) error {
	zw := zip.NewWriter(w)
	prefix := m.Path + "@" + m.Version + "/"
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(m.Dir, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		f, err := zw.Create(prefix + rel)
		if err != nil {
			return err
		}
		if _, err := f.Write(b); err != nil {
			return err
		}
	}
	return zw.Close()
}

// addToList adds version to the proxy's list file, once.
func addToList(list, version string) error {
	b, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(b))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	return os.WriteFile(list, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

// modulePath returns the path on the module line of a go.mod, or "".
func modulePath(gomod []byte) string {
	for line := range strings.SplitSeq(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// EscapePath is the go command's case escaping of a module path in a proxy
// URL or directory: each upper-case letter becomes '!' and its lower case.
func EscapePath(p string) (string, error) {
	var b strings.Builder
	for _, r := range p {
		switch {
		case r == '!' || r >= unicode.MaxASCII:
			return "", fmt.Errorf("modproxy: module path %q: character %q is not allowed", p, r)
		case unicode.IsUpper(r):
			b.WriteByte('!')
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}
