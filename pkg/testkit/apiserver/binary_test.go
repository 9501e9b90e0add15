package apiserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cachetune/cachetune/internal/checkout"
	"github.com/cachetune/cachetune/internal/modproxy"
)

// TestBinaryOutsideACheckout is the case of another module's tests that
// vendor the kit: no server sources above the working directory, none beside
// the package, no version to fetch them at, and no EnvBinary. The error must
// say how to get a binary, and nothing may be built.
func TestBinaryOutsideACheckout(t *testing.T) {
	t.Setenv(EnvBinary, "")
	t.Chdir(t.TempDir())
	defer func(f string) { thisFile = f }(thisFile)
	thisFile = filepath.Join(t.TempDir(), "vendor", "github.com", "cachetune", "cachetune", kitPackage, "binary.go")
	bin, err := Binary(context.Background(), nil)
	if err == nil {
		t.Fatalf("Binary outside a checkout = %q, want an error", bin)
	}
	for _, want := range []string{EnvBinary, "cachebench apiserver --build-only"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Binary outside a checkout: %v; want it to name %q", err, want)
		}
	}
}

func TestCompiledFrom(t *testing.T) {
	for _, tc := range []struct {
		file, root, version string
	}{
		{"/src/cachetune/pkg/testkit/apiserver/source.go", "/src/cachetune", ""},
		{"/home/u/go/pkg/mod/github.com/cachetune/cachetune@v0.1.0/pkg/testkit/apiserver/source.go", "/home/u/go/pkg/mod/github.com/cachetune/cachetune@v0.1.0", "v0.1.0"},
		{"github.com/cachetune/cachetune@v0.2.0-rc.1/pkg/testkit/apiserver/source.go", "github.com/cachetune/cachetune@v0.2.0-rc.1", "v0.2.0-rc.1"}, // -trimpath
		{"/m/github.com/cachetune/cachetune@v1.0.0-!r!c1/pkg/testkit/apiserver/source.go", "/m/github.com/cachetune/cachetune@v1.0.0-!r!c1", "v1.0.0-RC1"},
		{"/elsewhere/source.go", "", ""},
	} {
		root, version := compiledFrom(tc.file)
		if root != tc.root || version != tc.version {
			t.Errorf("compiledFrom(%q) = %q, %q; want %q, %q", tc.file, root, version, tc.root, tc.version)
		}
	}
}

func TestModuleQuery(t *testing.T) {
	for version, want := range map[string]string{
		"v0.1.0":                                    "v0.1.0",
		"v0.2.0-rc.1":                               "v0.2.0-rc.1",
		"v0.0.0-20261202010203-0123456789ab":        "0123456789ab",
		"v0.1.1-0.20261202010203-abcdefabcdef":      "abcdefabcdef",
		"v0.2.0-rc.1.0.20261202010203-abcdefabcdef": "abcdefabcdef",
	} {
		if got := moduleQuery(version); got != want {
			t.Errorf("moduleQuery(%q) = %q, want %q", version, got, want)
		}
	}
}

// TestFetchSourceFromTheModuleCache is another module's view: this package
// from the module cache at a version, no checkout. The server's sources come
// from the nested module at the same version, through GOPROXY (here a proxy
// directory holding this checkout's tools/kubeapiserver) into the user's
// cache directory: the same files as the checkout's, so the same hash and
// the same binary. A second call fetches nothing.
func TestFetchSourceFromTheModuleCache(t *testing.T) {
	root, err := checkout.Root(sourceDir)
	if err != nil {
		t.Fatal(err)
	}
	const version = "v0.99.0-kitcheck"
	proxy := t.TempDir()
	if err := modproxy.Publish(proxy, modproxy.Module{Path: nestedModule, Version: version, Dir: filepath.Join(root, sourceDir)}); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	t.Setenv("GOPROXY", "file://"+filepath.ToSlash(proxy))
	t.Setenv("GONOSUMDB", "github.com/cachetune/cachetune")
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOFLAGS", "-modcacherw")
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv(EnvBinary, "")
	t.Chdir(t.TempDir())
	defer func(f string) { thisFile = f }(thisFile)
	thisFile = filepath.Join(t.TempDir(), "github.com", "cachetune", "cachetune@"+version, kitPackage, "source.go")

	var progress strings.Builder
	s, err := findSource(context.Background(), &progress)
	if err != nil {
		t.Fatal(err)
	}
	wantDir := filepath.Join(cache, "cachetune", "kube-apiserver", version)
	if s.binDir != wantDir || s.src != filepath.Join(wantDir, "src") {
		t.Errorf("findSource = %+v, want the sources and binaries under %s", s, wantDir)
	}
	if !strings.Contains(progress.String(), nestedModule+"@"+version) {
		t.Errorf("progress %q does not name what it fetched", progress.String())
	}
	got, err := sourceHash(s.src)
	if err != nil {
		t.Fatal(err)
	}
	want, err := sourceHash(filepath.Join(root, sourceDir))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("the fetched sources hash to %s, the checkout's to %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(s.src, "cmd", "etcd", "main.go")); err != nil {
		t.Errorf("the fetched sources lack envtest's etcd command: %v", err)
	}

	progress.Reset()
	if again, err := findSource(context.Background(), &progress); err != nil || again != s || progress.Len() != 0 {
		t.Errorf("second findSource = %+v, %v, progress %q; want the same sources, fetched once", again, err, progress.String())
	}
}
