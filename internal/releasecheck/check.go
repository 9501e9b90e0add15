package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cachetune/cachetune/internal/modproxy"
)

// rootModule is the library module; the others are below it.
const rootModule = "github.com/cachetune/cachetune"

// published are the modules a release tags, by directory relative to the
// checkout: the root as vX, the others as DIR/vX.
var published = []string{".", "controllerruntime", "tools/kubeapiserver"}

// nestedRequiringRoot are the nested modules that require the root module:
// they must require it at the release version (their replace => ../ serves
// development in the checkout only; Go ignores it in a dependency).
var nestedRequiringRoot = []string{"controllerruntime", "internal/upstream/samplecontroller"}

// check is one run of the release check.
type check struct {
	root    string   // the checkout
	version string   // the version the modules are published at
	tmp     string   // everything the check writes, outside the checkout
	env     []string // the go command's environment in the outside modules
	modDir  string   // GOMODCACHE
}

// step runs f, announcing it and how long it took.
func (c *check) step(what string, f func() error) error {
	fmt.Printf("releasecheck: %s\n", what)
	start := time.Now()
	err := f()
	fmt.Printf("releasecheck: %s: %s (%s)\n", what, map[bool]string{true: "ok", false: "FAILED"}[err == nil], time.Since(start).Round(100*time.Millisecond))
	return err
}

// modulePath is the module path of the published directory dir.
func modulePath(dir string) string {
	if dir == "." {
		return rootModule
	}
	return rootModule + "/" + dir
}

// publish writes every published module into the proxy directory.
func (c *check) publish() error {
	when := time.Now()
	if out, err := exec.Command("git", "-C", c.root, "log", "-1", "--format=%cI").Output(); err == nil {
		if t, err := time.Parse(time.RFC3339, strings.TrimSpace(string(out))); err == nil {
			when = t
		}
	}
	for _, dir := range published {
		m := modproxy.Module{Path: modulePath(dir), Version: c.version, Dir: filepath.Join(c.root, dir), Time: when}
		if err := modproxy.Publish(filepath.Join(c.tmp, "proxy"), m); err != nil {
			return err
		}
	}
	return nil
}

// checkRequires fails when a nested module requires the root module at a
// version other than the release's: a user's go get of it would then pull
// another root version, or one that does not exist.
func checkRequires(root, version string) error {
	var bad []string
	for _, dir := range nestedRequiringRoot {
		cmd := exec.Command("go", "mod", "edit", "-json")
		cmd.Dir = filepath.Join(root, dir)
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("go mod edit -json in %s: %w", dir, err)
		}
		var mod struct {
			Require []struct{ Path, Version string }
		}
		if err := json.Unmarshal(out, &mod); err != nil {
			return fmt.Errorf("%s/go.mod: %w", dir, err)
		}
		i := slices.IndexFunc(mod.Require, func(r struct{ Path, Version string }) bool { return r.Path == rootModule })
		switch {
		case i < 0:
			bad = append(bad, dir+"/go.mod does not require "+rootModule)
		case mod.Require[i].Version != version:
			bad = append(bad, fmt.Sprintf("%s/go.mod requires %s %s", dir, rootModule, mod.Require[i].Version))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("the nested modules must require the root module at the release version %s (make release-version sets it): %s", version, strings.Join(bad, "; "))
	}
	return nil
}

// environment is the go command's environment in the outside modules: the
// proxy directory first, then the user's GOPROXY; no checksum database for
// cachetune's modules (they are not published); the user's build and module
// caches; a fresh user cache directory for the test kit's server; nothing
// that points at this checkout's binaries.
func (c *check) environment(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "-json", "GOPROXY", "GONOSUMDB", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	var goenv map[string]string
	if err := json.Unmarshal(out, &goenv); err != nil {
		return nil, err
	}
	c.modDir = goenv["GOMODCACHE"]
	proxy := "file://" + filepath.ToSlash(filepath.Join(c.tmp, "proxy"))
	if p := goenv["GOPROXY"]; p != "" && p != "off" {
		proxy += "," + p
	}
	nosum := rootModule
	if n := goenv["GONOSUMDB"]; n != "" {
		nosum = n + "," + nosum
	}
	// The go command indexes the packages of a module in the module cache
	// once per path@version, in GOCACHE, taking them to be immutable: a
	// second check at the same version with changed imports would build
	// with the first one's import lists (and fail: "could not import fmt").
	// goindex=0 makes it read the sources; the compiled packages themselves
	// are cached by content either way.
	godebug := "goindex=0"
	if d := os.Getenv("GODEBUG"); d != "" {
		godebug = d + "," + godebug
	}
	set := map[string]string{
		"GOPROXY":    proxy,
		"GONOSUMDB":  nosum,
		"GOCACHE":    goenv["GOCACHE"],
		"GOMODCACHE": c.modDir,
		// os.UserCacheDir: where the test kit fetches and builds the server.
		// GOCACHE is set above, so the build cache stays the user's.
		"XDG_CACHE_HOME": filepath.Join(c.tmp, "cache"),
		"GODEBUG":        godebug,
		"GOWORK":         "off",
		"GOTOOLCHAIN":    "local",
	}
	unset := []string{"CACHETUNE_KUBE_APISERVER", "KUBEBUILDER_ASSETS", "GOPRIVATE", "GONOPROXY"}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok && !slices.Contains(unset, k) {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env, nil
}

// forgetVersion removes the published modules at the check's version from
// the module cache, extracted and downloaded: the go command trusts what it
// has, so a module left from an earlier run would be used instead of this
// checkout's.
func (c *check) forgetVersion(ctx context.Context) error {
	if c.modDir == "" {
		return errors.New("no module cache directory")
	}
	for _, dir := range published {
		esc, err := modproxy.EscapePath(modulePath(dir))
		if err != nil {
			return err
		}
		extracted := filepath.Join(c.modDir, filepath.FromSlash(esc)+"@"+c.version)
		if err := removeReadOnly(extracted); err != nil {
			return err
		}
		vdir := filepath.Join(c.modDir, "cache", "download", filepath.FromSlash(esc), "@v")
		downloaded, err := filepath.Glob(filepath.Join(vdir, c.version+".*"))
		if err != nil {
			return err
		}
		// The version list the go command kept from the check's proxy.
		downloaded = append(downloaded, filepath.Join(vdir, "list"))
		for _, f := range downloaded {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return ctx.Err()
}

// removeReadOnly removes dir, whose files the module cache made read-only.
func removeReadOnly(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chmod(p, 0o755)
		}
		return err
	})
	if err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// lockCheck serialises release checks on one machine: they share the module
// cache entries of the version they publish.
func lockCheck() (func(), error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "cachetune-release-check.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock the release check: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// goCmd runs the go command (or another) in dir with the check's environment,
// its output passed through.
func (c *check) goCmd(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = c.env
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// goOutput runs the go command in dir and returns its standard output.
func (c *check) goOutput(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = c.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
