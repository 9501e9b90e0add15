package apiserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// EnvBinary names the environment variable that points at a prebuilt server binary.
// When it is set, no source is looked up and nothing is built.
const EnvBinary = "CACHETUNE_KUBE_APISERVER"

// binaryName is the file name of the built server under the repository's bin/.
const binaryName = "cachetune-kube-apiserver"

// sourceDir is the nested module, relative to the repository root.
var sourceDir = filepath.Join("tools", "kubeapiserver")

// ldflags stamp the Kubernetes version the nested module builds into the
// binary, so that /version says what it is (a build from module sources would
// otherwise report v0.0.0-master).
const ldflags = "-X k8s.io/component-base/version.gitVersion=v1.37.2 " +
	"-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"

// Binary returns the path of the server binary, building it first when it is
// missing or older than its sources.
//
// The binary is looked up in this order: the EnvBinary environment variable;
// then bin/cachetune-kube-apiserver in the cachetune checkout that contains
// the working directory, or else in the one this package was compiled from
// (a replace directive pointing at a checkout), rebuilt from tools/kubeapiserver
// when the hash of that module's sources changed; then, when this package
// comes from the module cache at a version (another module's go get), the
// binary built from the nested module github.com/cachetune/cachetune/tools/kubeapiserver
// at the same version, fetched with go mod download into the user's cache
// directory (os.UserCacheDir()/cachetune/kube-apiserver/VERSION) and built
// there. The first build takes about 8 minutes on 2 cores; later calls
// return at once. Concurrent callers (test packages run in parallel) build it
// only once: a file lock serialises them. Progress lines go to progress when
// it is not nil.
func Binary(ctx context.Context, progress io.Writer) (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	s, err := findSource(ctx, progress)
	if err != nil {
		return "", err
	}
	key, err := sourceHash(s.src)
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", s.src, err)
	}
	bin := filepath.Join(s.binDir, binaryName)
	stamp := bin + ".sha256"
	if upToDate(bin, stamp, key) {
		return bin, nil
	}

	if err := os.MkdirAll(s.binDir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(s.binDir, "."+binaryName+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if upToDate(bin, stamp, key) { // another process built it while we waited
		return bin, nil
	}

	if progress != nil {
		fmt.Fprintf(progress, "building the local kube-apiserver from %s (the first build takes about 8 minutes on 2 cores; later runs reuse it)\n", s.src)
	}
	start := time.Now()
	tmp := bin + ".tmp"
	// -v lists each package as it is compiled: progress every 30 s.
	cmd := exec.CommandContext(ctx, "go", "build", "-v", "-ldflags", ldflags, "-o", tmp, ".")
	cmd.Dir = s.src
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out := &buildOutput{}
	cmd.Stdout, cmd.Stderr = out, out
	stop := out.report(progress, start, buildProgressEvery)
	err = cmd.Run()
	stop()
	if err != nil {
		return "", fmt.Errorf("build the local kube-apiserver in %s: %w\n%s", s.src, err, out.output())
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	if err := os.WriteFile(stamp, []byte(key+"\n"), 0o644); err != nil {
		return "", err
	}
	if progress != nil {
		fmt.Fprintf(progress, "built %s in %s\n", bin, time.Since(start).Round(time.Second))
	}
	return bin, nil
}

func upToDate(bin, stamp, key string) bool {
	if _, err := os.Stat(bin); err != nil {
		return false
	}
	b, err := os.ReadFile(stamp)
	return err == nil && strings.TrimSpace(string(b)) == key
}

// sourceHash hashes the files that determine the binary: go.mod, go.sum and the Go
// sources of the nested module, plus the Go version that builds it.
func sourceHash(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && (strings.HasSuffix(n, ".go") || n == "go.mod" || n == "go.sum") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	h := sha256.New()
	goVersion, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w (is Go installed?)", err)
	}
	h.Write(goVersion)
	h.Write([]byte(ldflags))
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// lockFile takes an exclusive advisory lock, blocking until it is free.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
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
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
