package apiserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// envtestStamp is the file in an assets directory that holds the hash of the
// sources its binaries were built from.
const envtestStamp = ".cachetune-envtest.sha256"

// etcdMain is the nested module's etcd command, relative to the module.
var etcdMain = filepath.Join("cmd", "etcd")

// envtestBinary is one binary of controller-runtime's envtest assets.
type envtestBinary struct {
	name  string   // file name envtest looks for in KUBEBUILDER_ASSETS
	build []string // go build arguments after -o FILE
}

// envtestBinaries are built from the nested module's pinned versions:
// kube-apiserver is k8s.io/kubernetes' own command, stamped with its version
// like the combined binary; etcd is go.etcd.io/etcd/server/v3's etcdmain.
var envtestBinaries = []envtestBinary{
	{name: "kube-apiserver", build: []string{"-ldflags", ldflags, "k8s.io/kubernetes/cmd/kube-apiserver"}},
	{name: "etcd", build: []string{"./" + filepath.ToSlash(etcdMain)}},
}

// EnvtestAssets builds the kube-apiserver and etcd binaries that
// controller-runtime's envtest runs into dir, and returns dir as an absolute
// path: point KUBEBUILDER_ASSETS at it and an unchanged envtest.Environment
// starts them, with nothing downloaded.
//
// Both come from the nested module tools/kubeapiserver (Kubernetes v1.37.2 and
// the etcd it pins), found as Binary finds them: in a checkout, or fetched
// at this package's version from the module cache. An empty dir means
// envtest beside the server binary: bin/envtest in a checkout. The binaries are rebuilt only when that
// module's sources or the Go version changed; a file lock makes concurrent callers
// build once. Progress lines go to progress when it is not nil. There is no
// kubectl: envtest needs one only when a test calls ControlPlane.KubeCtl.
func EnvtestAssets(ctx context.Context, dir string, progress io.Writer) (string, error) {
	s, err := findSource(ctx, progress)
	if err != nil {
		return "", err
	}
	if dir == "" {
		dir = filepath.Join(s.binDir, "envtest")
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", err
	}
	src := s.src
	key, err := envtestHash(src)
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", src, err)
	}
	stamp := filepath.Join(dir, envtestStamp)
	if assetsUpToDate(dir, stamp, key) {
		return dir, nil
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create envtest assets directory: %w", err)
	}
	unlock, err := lockFile(filepath.Join(dir, ".cachetune-envtest.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if assetsUpToDate(dir, stamp, key) { // another process built them while we waited
		return dir, nil
	}
	// A stale stamp must not survive a failed build.
	if err := os.Remove(stamp); err != nil && !os.IsNotExist(err) {
		return "", err
	}

	for _, b := range envtestBinaries {
		if progress != nil {
			fmt.Fprintf(progress, "building envtest's %s from %s (minutes the first time; later runs reuse it)\n", b.name, src)
		}
		start := time.Now()
		out := filepath.Join(dir, b.name)
		tmp := out + ".tmp"
		cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", tmp}, b.build...)...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if log, err := cmd.CombinedOutput(); err != nil {
			_ = os.Remove(tmp)
			return "", fmt.Errorf("build envtest's %s in %s: %w\n%s", b.name, src, err, log)
		}
		if err := os.Rename(tmp, out); err != nil {
			return "", err
		}
		if progress != nil {
			fmt.Fprintf(progress, "built %s in %s\n", out, time.Since(start).Round(time.Second))
		}
	}
	if err := os.WriteFile(stamp, []byte(key+"\n"), 0o644); err != nil {
		return "", err
	}
	return dir, nil
}

func assetsUpToDate(dir, stamp, key string) bool {
	for _, b := range envtestBinaries {
		if _, err := os.Stat(filepath.Join(dir, b.name)); err != nil {
			return false
		}
	}
	b, err := os.ReadFile(stamp)
	return err == nil && strings.TrimSpace(string(b)) == key
}

// envtestHash extends the combined binary's source hash with the etcd command,
// which only the envtest assets are built from.
func envtestHash(src string) (string, error) {
	base, err := sourceHash(src)
	if err != nil {
		return "", err
	}
	etcd, err := sourceHash(filepath.Join(src, etcdMain))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte("envtest\n" + base + "\n" + etcd + "\n"))
	return hex.EncodeToString(sum[:]), nil
}
