package profile_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cachetune/cachetune/internal/leakcheck"
	cprofile "github.com/cachetune/cachetune/pkg/profile"
)

// fetch GETs url and returns the status and body.
func fetch(t *testing.T, url string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp.StatusCode, body
}

// The handler on a program's own mux, beside the program's own route: every
// profile Start serves, health and readiness, and no /metrics unless asked.
func TestHandlerOnAProgramsMux(t *testing.T) {
	leakcheck.Check(t)
	h, err := cprofile.NewHandler(cprofile.WithReadiness("informers", func(context.Context) error {
		return errors.New("pods not synced")
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/api", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "the program's own\n") })
	for _, p := range h.Paths() {
		mux.Handle(p, h)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer srv.CloseClientConnections()

	for path, sampleType := range map[string]string{
		"/debug/pprof/heap":                 "inuse_space/bytes",
		"/debug/pprof/goroutine":            "goroutine/count",
		"/debug/pprof/profile?seconds=1":    "cpu/nanoseconds",
		"/debug/pprof/delta_heap?seconds=1": "inuse_space/bytes",
		"/debug/fgprof?seconds=1":           "time/nanoseconds",
	} {
		status, body := fetch(t, srv.URL+path)
		if status != http.StatusOK {
			t.Errorf("GET %s: status %d: %s", path, status, truncate(body))
			continue
		}
		if types := sampleTypes(parseProfile(t, path, body)); !slices.Contains(types, sampleType) {
			t.Errorf("GET %s: sample types %q, want %s", path, types, sampleType)
		}
	}
	if status, body := fetch(t, srv.URL+"/healthz"); status != http.StatusOK {
		t.Errorf("/healthz: %d %s", status, body)
	}
	if status, body := fetch(t, srv.URL+"/readyz"); status != http.StatusServiceUnavailable || !strings.Contains(string(body), "[-]informers failed: pods not synced") {
		t.Errorf("/readyz: %d %q, want 503 naming the failing check", status, body)
	}
	if status, _ := fetch(t, srv.URL+"/metrics"); status != http.StatusNotFound {
		t.Errorf("/metrics without WithMetrics: status %d, want 404 (the program serves its own)", status)
	}
	if status, body := fetch(t, srv.URL+"/api"); status != http.StatusOK || string(body) != "the program's own\n" {
		t.Errorf("the program's route: %d %q", status, body)
	}
	if want := []string{"/debug/pprof/", "/debug/fgprof", "/healthz", "/readyz"}; !slices.Equal(h.Paths(), want) {
		t.Errorf("Paths() = %q, want %q", h.Paths(), want)
	}
}

// With WithMetrics the handler serves /metrics from the program's registry,
// with the runtime histograms; Close takes its collectors back.
func TestHandlerMetrics(t *testing.T) {
	leakcheck.Check(t)
	reg := prometheus.NewRegistry()
	h, err := cprofile.NewHandler(cprofile.WithMetrics(reg))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(h.Paths(), "/metrics") {
		t.Errorf("Paths() = %q, want /metrics with WithMetrics", h.Paths())
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer srv.CloseClientConnections()
	status, body := fetch(t, srv.URL+"/metrics")
	if status != http.StatusOK || !strings.Contains(string(body), "go_sched_latencies_seconds_bucket") {
		t.Errorf("/metrics: %d, want the scheduler-latency histogram in:\n%s", status, truncate(body))
	}
	h.Close()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 0 {
		t.Errorf("after Close the registry still has %d metric families, want the collectors taken back", len(families))
	}
	if status, _ := fetch(t, srv.URL+"/debug/pprof/heap"); status != http.StatusServiceUnavailable {
		t.Errorf("a request after Close: status %d, want 503", status)
	}
	h.Close() // a second Close does nothing
}

// Close ends a long profile in flight, so that the host server's own
// shutdown is not held for the profile's 60 seconds.
func TestHandlerCloseEndsProfilesInFlight(t *testing.T) {
	leakcheck.Check(t)
	h, err := cprofile.NewHandler()
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		h.ServeHTTP(w, r)
	}))
	var serverLog strings.Builder
	srv.Config.ErrorLog = log.New(&lockedWriter{w: &serverLog}, "", 0)
	srv.Start()
	defer srv.Close()
	done := make(chan error, 1)
	go func() {
		resp, err := noKeepAlive.Get(srv.URL + "/debug/fgprof?seconds=60")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	<-entered
	start := time.Now()
	h.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the request in flight: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a 60 s profile still runs 20 s after Close")
	}
	t.Logf("the profile ended %s after Close", time.Since(start))
	srv.Close()
	// Closed at once, the profile usually ends before fgprof's first sample,
	// where fgprof itself panics (divides by its sample count): the handler
	// must answer, not panic.
	if strings.Contains(serverLog.String(), "panic") {
		t.Errorf("the server logged a panic:\n%s", serverLog.String())
	}
}

// lockedWriter serialises writes from the server's goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestNewHandlerRejectsStartsOptions(t *testing.T) {
	for name, opt := range map[string]cprofile.Option{
		"WithAddr":      cprofile.WithAddr("127.0.0.1:0"),
		"WithPyroscope": cprofile.WithPyroscope(cprofile.PyroscopeConfig{ApplicationName: "a", ServerAddress: "http://127.0.0.1:1"}),
	} {
		if h, err := cprofile.NewHandler(opt); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("NewHandler(%s) = %v, %v; want an error naming it", name, h, err)
		}
	}
	if _, err := cprofile.NewHandler(cprofile.WithReadinessTimeout(0)); err == nil {
		t.Error("NewHandler(WithReadinessTimeout(0)): want the option's error")
	}
}
