package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

// TestAPIServerBuildOnly checks what another module's tests rely on: with
// --build-only, stdout is the binary's path and nothing else, so that
// $(cachebench apiserver --build-only) can be exported as
// CACHETUNE_KUBE_APISERVER. A prebuilt stand-in keeps it from building.
func TestAPIServerBuildOnly(t *testing.T) {
	prebuilt := filepath.Join(t.TempDir(), "cachetune-kube-apiserver")
	if err := os.WriteFile(prebuilt, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(apiserver.EnvBinary, prebuilt)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"apiserver", "--build-only"}, &stdout, &stderr); code != 0 {
		t.Fatalf("cachebench apiserver --build-only exited %d: %s", code, stderr.String())
	}
	if got := strings.TrimSuffix(stdout.String(), "\n"); got != prebuilt {
		t.Errorf("stdout = %q, want the binary's path %q alone", stdout.String(), prebuilt)
	}
}
