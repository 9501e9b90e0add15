// Command releasecheck proves that cachetune installs from another module as
// a release would publish it: it serves this checkout's modules (the root,
// controllerruntime and tools/kubeapiserver) at one version from a local
// file-based module proxy (internal/modproxy), chained before the normal
// GOPROXY, and then, in temporary modules outside the checkout, with no
// replace directive, runs the go get lines README.md gives and a tiny
// program with each:
//
//   - clientgo: pkg/leanstore and the test kit (pkg/testkit/apiserver). Its
//     test starts the real kube-apiserver with apiserver.Main and lists
//     namespaces; the server is built from tools/kubeapiserver at the same
//     version, fetched through the proxy, as on a user's machine. Its program
//     syncs a leanstore factory against that server.
//   - kubebuilder: controllerruntime/leancache and controllerruntime/profiling.
//     Its program builds a controller-runtime cache from leancache.NewCache
//     against the test kit's server, and serves pkg/profile's endpoints as
//     the metrics server's extra handlers.
//
// Usage (make release-check):
//
//	go run ./internal/releasecheck -version v0.1.0
//
// The go command's caches are the user's (GOCACHE, GOMODCACHE), so that what
// was compiled before is not compiled again; the versions it serves are
// removed from the module cache before and after, so that a fake release
// never outlives the check. The server is built into a temporary user cache
// directory (XDG_CACHE_HOME), so every run proves the build from the module
// cache.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cachetune/cachetune/internal/checkout"
)

func main() {
	version := flag.String("version", "", "the version to publish the modules at (the Makefile's RELEASE_VERSION)")
	keep := flag.Bool("keep", false, "keep the temporary directory (proxy, outside modules, built server) and print it")
	flag.Parse()
	if *version == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: releasecheck -version vX.Y.Z [-keep]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	if err := run(ctx, *version, *keep); err != nil {
		fmt.Fprintf(os.Stderr, "releasecheck: FAIL after %s: %v\n", time.Since(start).Round(time.Second), err)
		os.Exit(1)
	}
	fmt.Printf("releasecheck: ok: cachetune %s installs and runs from another module, no replace directive (%s)\n", *version, time.Since(start).Round(time.Second))
}

func run(ctx context.Context, version string, keep bool) error {
	root, err := checkout.Root(filepath.Join("tools", "kubeapiserver"))
	if err != nil {
		return err
	}
	if err := checkRequires(root, version); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "cachetune-release-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("releasecheck: keeping", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}

	c := &check{root: root, version: version, tmp: tmp}
	if err := c.step("publish the modules to a local proxy", func() error { return c.publish() }); err != nil {
		return err
	}
	env, err := c.environment(ctx)
	if err != nil {
		return err
	}
	c.env = env

	unlock, err := lockCheck()
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.forgetVersion(ctx); err != nil {
		return err
	}
	defer func() {
		if err := c.forgetVersion(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintln(os.Stderr, "releasecheck:", err)
		}
	}()

	for _, o := range outsideModules {
		if err := c.outside(ctx, o); err != nil {
			return fmt.Errorf("%s: %w", o.name, err)
		}
	}
	return nil
}
