package apiserver_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

// TestEnvtestAssets checks that the envtest assets are built (or found up to
// date) and are the versions the nested module pins. The controller-runtime
// module's tests start envtest from them.
func TestEnvtestAssets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries the first time")
	}
	ctx := ctxFor(t)
	dir, err := apiserver.EnvtestAssets(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(dir) {
		t.Errorf("EnvtestAssets returned %q, want an absolute path for KUBEBUILDER_ASSETS", dir)
	}
	for name, want := range map[string]string{"kube-apiserver": "Kubernetes v1.37.2", "etcd": "etcd Version: 3.7.0"} {
		out, err := exec.CommandContext(ctx, filepath.Join(dir, name), "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --version: %v\n%s", name, err, out)
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("%s --version printed %q, want it to contain %q", name, out, want)
		}
	}

	// Up to date now: a second call must not build again.
	before := modTime(t, filepath.Join(dir, "kube-apiserver"))
	if _, err := apiserver.EnvtestAssets(ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	if after := modTime(t, filepath.Join(dir, "kube-apiserver")); !after.Equal(before) {
		t.Errorf("a second EnvtestAssets call rebuilt up-to-date assets (kube-apiserver modified %s, then %s)", before, after)
	}
}

func modTime(t *testing.T, path string) time.Time {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}
