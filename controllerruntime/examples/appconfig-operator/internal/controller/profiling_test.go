package controller_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cachetune/cachetune/controllerruntime/examples/appconfig-operator/internal/controller"
	"github.com/cachetune/cachetune/internal/leakcheck"
)

// freeAddr returns a loopback address with a port free a moment ago: the
// manager does not report the port its metrics server bound.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// The operator's metrics server serves pkg/profile's endpoints: a heap and a
// wall-clock profile fetched through it parse as pprof profiles, /metrics is
// still the manager's, and a long profile in flight does not hold the
// manager's shutdown (the metrics server's requests end with the manager).
func TestProfilesOnTheMetricsServer(t *testing.T) {
	leakcheck.Check(t)
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	mgr, _, err := controller.NewManager(ctx, cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: addr},
		HealthProbeBindAddress: "0",
		// TestAppConfig ran a manager with the same controller in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			wg.Wait()
		}
	}()

	get := func(path string) (int, []byte, error) {
		resp, err := noKeepAlive.Get("http://" + addr + path)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	var heap []byte
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		status, body, err := get("/debug/pprof/heap")
		heap = body
		return err == nil && status == http.StatusOK, nil // the server may not listen yet
	}); err != nil {
		t.Fatalf("no heap profile from the metrics server at %s: %v", addr, err)
	}
	for path, body := range map[string][]byte{"/debug/pprof/heap": heap} {
		if _, err := profile.Parse(bytes.NewReader(body)); err != nil {
			t.Errorf("%s through the metrics server: %v", path, err)
		}
	}
	status, body, err := get("/debug/fgprof?seconds=1")
	if err != nil || status != http.StatusOK {
		t.Fatalf("/debug/fgprof: %d, %v", status, err)
	}
	if p, err := profile.Parse(bytes.NewReader(body)); err != nil || len(p.Sample) == 0 {
		t.Errorf("/debug/fgprof through the metrics server: %v, want samples", err)
	}
	if status, body, err := get("/metrics"); err != nil || status != http.StatusOK || !bytes.Contains(body, []byte("controller_runtime_")) {
		t.Errorf("/metrics: %d, %v; want the manager's metrics", status, err)
	}

	inFlight := make(chan error, 1)
	go func() {
		_, _, err := get("/debug/fgprof?seconds=60")
		inFlight <- err
	}()
	// Wait until the profile runs: its goroutine is then in the handler.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return profileInFlight(t, get), nil
	}); err != nil {
		t.Fatalf("the 60 s profile did not start: %v", err)
	}
	start := time.Now()
	cancel()
	wg.Wait()
	stopped = true
	// The manager's own grace period is 30 s; a profile that held the metrics
	// server would use all of it and make Start fail.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the manager took %s to stop with a 60 s profile in flight", d)
	}
	if err := <-inFlight; err != nil {
		t.Logf("the profile in flight ended with %v", err)
	}
}

// profileInFlight reports whether a goroutine profile of the process (taken
// through the metrics server) shows a wall-clock profile being served.
func profileInFlight(t *testing.T, get func(string) (int, []byte, error)) bool {
	t.Helper()
	status, body, err := get("/debug/pprof/goroutine?debug=1")
	return err == nil && status == http.StatusOK && bytes.Contains(body, []byte("serveWallclock"))
}
