package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/cachetune/cachetune/internal/checkout"
)

// nestedModule is the module the server is built from: tools/kubeapiserver,
// tagged tools/kubeapiserver/vX at every release vX of the root module.
const nestedModule = "github.com/cachetune/cachetune/tools/kubeapiserver"

// kitPackage is this package's directory relative to its module's root.
var kitPackage = filepath.Join("pkg", "testkit", "apiserver")

// thisFile is this source file's path as the compiler recorded it: in a
// checkout, its path there; from the module cache, a path whose module
// directory is named cachetune@VERSION (with -trimpath, the module path and
// version themselves). Tests replace it.
var thisFile = func() string {
	_, file, _, _ := runtime.Caller(0)
	return file
}()

// serverSource is where the server's sources are and where its binaries go.
type serverSource struct {
	src    string // the tools/kubeapiserver module
	binDir string // the built binaries (the checkout's bin/, or a user cache directory)
}

// findSource finds the sources of the server: in the cachetune checkout
// that holds the working directory, else in the one this package was
// compiled from (a replace directive pointing at a checkout), else, when
// this package came from the module cache at a version, in
// tools/kubeapiserver at the same version, fetched with the go command into
// the user's cache directory.
func findSource(ctx context.Context, progress io.Writer) (serverSource, error) {
	if root, err := checkout.Root(sourceDir); err == nil {
		return serverSource{src: filepath.Join(root, sourceDir), binDir: filepath.Join(root, "bin")}, nil
	} else if !errors.Is(err, checkout.ErrNotFound) {
		return serverSource{}, err
	}
	root, version := compiledFrom(thisFile)
	if root != "" {
		if _, err := os.Stat(filepath.Join(root, sourceDir, "go.mod")); err == nil {
			return serverSource{src: filepath.Join(root, sourceDir), binDir: filepath.Join(root, "bin")}, nil
		}
	}
	if version == "" {
		return serverSource{}, fmt.Errorf("no cachetune checkout holds the working directory, and this package (%s) was not built from one nor from the module cache at a version: set %s to a server binary (`go run ./cmd/cachebench apiserver --build-only` in a checkout prints its path)", thisFile, EnvBinary)
	}
	return fetchSource(ctx, version, progress)
}

// compiledFrom splits the path of this file as compiled into the root of its
// module and, for a module from the module cache, the version in that
// root's name (cachetune@v0.1.0). A vendored copy has neither.
func compiledFrom(file string) (root, version string) {
	dir := filepath.Dir(file)
	if !strings.HasSuffix(dir, string(filepath.Separator)+kitPackage) && !strings.HasSuffix(dir, "/"+filepath.ToSlash(kitPackage)) {
		return "", ""
	}
	root = dir[:len(dir)-len(kitPackage)-1]
	if _, v, ok := strings.Cut(filepath.Base(root), "@"); ok {
		return root, unescapeVersion(v)
	}
	return root, ""
}

// unescapeVersion undoes the module cache's case escaping (v1.0.0-!r!c1 is
// v1.0.0-RC1).
func unescapeVersion(v string) string {
	var b strings.Builder
	upper := false
	for _, r := range v {
		switch {
		case r == '!':
			upper = true
		case upper:
			b.WriteString(strings.ToUpper(string(r)))
			upper = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// pseudoVersion matches the timestamp and revision that end a
// pseudo-version (v0.0.0-20260102150405-0123456789ab).
var pseudoVersion = regexp.MustCompile(`[.-](\d{14})-([0-9a-f]{12})$`)

// moduleQuery is what to ask the go command for to get tools/kubeapiserver
// of the same commit as the root module at version: the same version for a
// release (both are tagged together), the commit itself for a
// pseudo-version (the nested module's own pseudo-version differs).
func moduleQuery(version string) string {
	if m := pseudoVersion.FindStringSubmatch(version); m != nil {
		return m[2]
	}
	return version
}

// fetchSource copies tools/kubeapiserver at the root module's version out of
// the module cache (go mod download fetches it through GOPROXY first) into
// a writable directory of the user's cache, where the binaries are built
// too. Building there makes it the main module, so its replace directives
// for the Kubernetes staging modules apply.
func fetchSource(ctx context.Context, version string, progress io.Writer) (serverSource, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return serverSource{}, fmt.Errorf("a cache directory for the server built from %s@%s: %w (or set %s)", nestedModule, version, err, EnvBinary)
	}
	root := filepath.Join(cache, "cachetune", "kube-apiserver", version)
	s := serverSource{src: filepath.Join(root, "src"), binDir: root}
	done := filepath.Join(root, "src.done")
	if _, err := os.Stat(done); err == nil {
		return s, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return serverSource{}, err
	}
	unlock, err := lockFile(filepath.Join(root, ".src.lock"))
	if err != nil {
		return serverSource{}, err
	}
	defer unlock()
	if _, err := os.Stat(done); err == nil { // another process fetched it while we waited
		return s, nil
	}

	query := nestedModule + "@" + moduleQuery(version)
	if progress != nil {
		fmt.Fprintf(progress, "fetching the local kube-apiserver's sources, %s (this package is cachetune %s)\n", query, version)
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", query)
	cmd.Dir = root // no go.mod here: the user's module and workspace play no part
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var got struct{ Dir, Error string }
	if err := json.Unmarshal(out, &got); err != nil || got.Error != "" || got.Dir == "" {
		return serverSource{}, fmt.Errorf("go mod download %s: %v %s%s (or set %s to a server binary)", query, runErr, got.Error, strings.TrimSpace(stderr.String()), EnvBinary)
	}
	// The module cache is read-only and shared: copy the sources out.
	tmp := s.src + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return serverSource{}, err
	}
	if err := copyTree(got.Dir, tmp); err != nil {
		return serverSource{}, fmt.Errorf("copy %s: %w", got.Dir, err)
	}
	if err := os.RemoveAll(s.src); err != nil {
		return serverSource{}, err
	}
	if err := os.Rename(tmp, s.src); err != nil {
		return serverSource{}, err
	}
	return s, os.WriteFile(done, []byte(query+"\n"), 0o644)
}

// copyTree copies the regular files under from into a new directory to,
// writable by the user.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		target := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
