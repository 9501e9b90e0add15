// Command kubebuilder is what an operator's author writes after
// `go get github.com/cachetune/cachetune/controllerruntime/leancache@VERSION`:
// a controller-runtime cache whose informers are leanstore's (the cache a
// manager builds with NewCache: lean.NewCache), here against the test kit's
// local kube-apiserver, and pkg/profile's endpoints on controller-runtime's
// metrics server. The release check builds and runs it in a module of its
// own, outside the cachetune checkout, with no replace directive.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cachetune/cachetune/controllerruntime/leancache"
	"github.com/cachetune/cachetune/controllerruntime/profiling"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/profile"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kubebuilder:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	srv, err := apiserver.Start(ctx, apiserver.Options{Progress: os.Stderr})
	if err != nil {
		return err
	}
	defer srv.Stop()

	lean := leancache.New(leancache.Options{
		Leanstore: []leanstore.Option{leanstore.WithStripLastApplied()},
	})
	c, err := lean.NewCache(srv.Config, cache.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	wg.Go(func() { _ = c.Start(runCtx) })
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("the cache did not start: %v", lean.Check(ctx))
	}
	var namespaces corev1.NamespaceList
	if err := c.List(ctx, &namespaces); err != nil { // creates the informer and waits for it to sync
		return err
	}
	var names []string
	for _, ns := range namespaces.Items {
		names = append(names, ns.Name)
	}
	if !slices.Contains(names, "kube-system") {
		return fmt.Errorf("the cache lists namespaces %q, without kube-system", names)
	}
	if err := lean.Check(ctx); err != nil {
		return err
	}
	fmt.Printf("leancache: namespaces %q from a leanstore informer, status %s\n", names, lean.Status()[0].ListPath)

	return profileOnMetricsServer(runCtx)
}

// profileOnMetricsServer serves pkg/profile's endpoints as extra handlers of
// controller-runtime's metrics server, and fetches a heap profile through it.
func profileOnMetricsServer(ctx context.Context) error {
	h, err := profile.NewHandler()
	if err != nil {
		return err
	}
	defer h.Close()
	ms, err := metricsserver.NewServer(metricsserver.Options{BindAddress: "127.0.0.1:0", ExtraHandlers: profiling.ExtraHandlers(h)}, nil, nil)
	if err != nil {
		return err
	}
	msCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	wg.Go(func() { _ = ms.Start(msCtx) })
	addr := ""
	for addr == "" && ctx.Err() == nil {
		addr = ms.(interface{ GetBindAddr() string }).GetBindAddr()
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
		return fmt.Errorf("heap profile through the metrics server: %s, %d bytes", resp.Status, len(body))
	}
	fmt.Printf("profiling: a %d-byte heap profile from controller-runtime's metrics server\n", len(body))
	return nil
}
