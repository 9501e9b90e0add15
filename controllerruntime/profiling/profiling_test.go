package profiling_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"k8s.io/apimachinery/pkg/util/wait"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cachetune/cachetune/controllerruntime/profiling"
	"github.com/cachetune/cachetune/internal/leakcheck"
	cprofile "github.com/cachetune/cachetune/pkg/profile"
)

var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := noKeepAlive.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, b
}

// controller-runtime's own metrics server, as a manager builds it, with the
// profiles as extra handlers: they serve, and /metrics stays the server's.
func TestExtraHandlersOnTheMetricsServer(t *testing.T) {
	leakcheck.Check(t)
	h, err := cprofile.NewHandler()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	extra := profiling.ExtraHandlers(h)
	var paths []string
	for p := range extra {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	if want := []string{"/debug/fgprof", "/debug/pprof/", "/healthz", "/readyz"}; !slices.Equal(paths, want) {
		t.Errorf("ExtraHandlers paths = %q, want %q", paths, want)
	}

	srv, err := metricsserver.NewServer(metricsserver.Options{BindAddress: "127.0.0.1:0", ExtraHandlers: extra}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() {
		if err := srv.Start(ctx); err != nil {
			t.Errorf("metrics server: %v", err)
		}
	})
	bound := srv.(interface{ GetBindAddr() string })
	var addr string
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		addr = bound.GetBindAddr()
		return addr != "", nil
	}); err != nil {
		t.Fatalf("the metrics server did not bind: %v", err)
	}

	status, body := get(t, "http://"+addr+"/debug/pprof/heap")
	if status != http.StatusOK {
		t.Fatalf("/debug/pprof/heap through the metrics server: %d %s", status, body)
	}
	p, err := profile.Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/debug/pprof/heap: %v", err)
	}
	if len(p.Sample) == 0 {
		t.Error("/debug/pprof/heap through the metrics server has no samples")
	}
	if status, body := get(t, "http://"+addr+"/metrics"); status != http.StatusOK || !strings.Contains(string(body), "# TYPE") {
		t.Errorf("/metrics of the metrics server: %d %.200s", status, body)
	}
}
