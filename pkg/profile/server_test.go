package profile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/cachetune/cachetune/internal/leakcheck"
	cprofile "github.com/cachetune/cachetune/pkg/profile"
)

// startServer starts a server on a free loopback port and shuts it down when
// the test ends.
func startServer(t *testing.T, opts ...cprofile.Option) *cprofile.Server {
	t.Helper()
	s, err := cprofile.Start(t.Context(), append([]cprofile.Option{cprofile.WithAddr("127.0.0.1:0")}, opts...)...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s
}

// get fetches path from s and returns the status and body.
func get(t *testing.T, s *cprofile.Server, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+s.Addr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", path, err)
	}
	return resp.StatusCode, body
}

// noKeepAlive leaves no pooled connection behind for the leak check.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// parseProfile checks that body is a valid pprof profile and returns it.
func parseProfile(t *testing.T, what string, body []byte) *profile.Profile {
	t.Helper()
	p, err := profile.Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: profile.Parse: %v (body %q)", what, err, truncate(body))
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("%s: CheckValid: %v", what, err)
	}
	return p
}

func truncate(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

func sampleTypes(p *profile.Profile) []string {
	var ts []string
	for _, st := range p.SampleType {
		ts = append(ts, st.Type+"/"+st.Unit)
	}
	return ts
}

// retained keeps allocations alive across a delta window.
var retained [][]byte

func TestProfileEndpoints(t *testing.T) {
	leakcheck.Check(t)
	s := startServer(t)

	// Something to find in the delta: allocate while the deltas run.
	stopAlloc := make(chan struct{})
	var allocWG sync.WaitGroup
	allocWG.Add(1)
	go func() {
		defer allocWG.Done()
		for {
			select {
			case <-stopAlloc:
				return
			case <-time.After(10 * time.Millisecond):
				retained = append(retained, make([]byte, 256<<10))
			}
		}
	}()
	t.Cleanup(func() { close(stopAlloc); allocWG.Wait(); retained = nil })

	tests := []struct {
		path string
		// wantType is a sample type the profile must have.
		wantType string
		// wantSamples requires at least one sample.
		wantSamples bool
	}{
		{path: "/debug/pprof/heap", wantType: "inuse_space/bytes", wantSamples: true},
		{path: "/debug/pprof/heap?gc=1", wantType: "inuse_space/bytes", wantSamples: true},
		{path: "/debug/pprof/allocs", wantType: "alloc_space/bytes", wantSamples: true},
		{path: "/debug/pprof/goroutine", wantType: "goroutine/count", wantSamples: true},
		{path: "/debug/pprof/threadcreate", wantType: "threadcreate/count"},
		{path: "/debug/pprof/block", wantType: "delay/nanoseconds"},
		{path: "/debug/pprof/mutex", wantType: "delay/nanoseconds"},
		{path: "/debug/pprof/profile?seconds=1", wantType: "cpu/nanoseconds"},
		// Without gc=1 a delta sees only the GCs that happened to complete in
		// the window, so it may be empty; with it, it holds the allocations.
		{path: "/debug/pprof/delta_heap?seconds=1", wantType: "alloc_space/bytes"},
		{path: "/debug/pprof/delta_heap?seconds=1&gc=1", wantType: "inuse_space/bytes", wantSamples: true},
		{path: "/debug/pprof/allocs?seconds=1", wantType: "alloc_space/bytes"},
		{path: "/debug/fgprof?seconds=1", wantType: "time/nanoseconds", wantSamples: true},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.path, "/debug/"), func(t *testing.T) {
			t.Parallel()
			status, body := get(t, s, tt.path)
			if status != http.StatusOK {
				t.Fatalf("GET %s: status %d: %s", tt.path, status, truncate(body))
			}
			p := parseProfile(t, tt.path, body)
			if !contains(sampleTypes(p), tt.wantType) {
				t.Errorf("GET %s: sample types %v, want %s among them", tt.path, sampleTypes(p), tt.wantType)
			}
			if tt.wantSamples && len(p.Sample) == 0 {
				t.Errorf("GET %s: no samples", tt.path)
			}
		})
	}
}

func TestWallclockProfileHasWallclockSamples(t *testing.T) {
	leakcheck.Check(t)
	s := startServer(t)

	// A goroutine asleep the whole time: fgprof counts off-CPU time too, so
	// it must show up, where a CPU profile would have nothing of it.
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); offCPUWait(done) }()
	defer func() { close(done); wg.Wait() }()

	status, body := get(t, s, "/debug/fgprof?seconds=1")
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, truncate(body))
	}
	p := parseProfile(t, "fgprof", body)
	if p.PeriodType == nil || p.PeriodType.Type != "wallclock" {
		t.Errorf("period type %v, want wallclock", p.PeriodType)
	}
	timeIdx := -1
	for i, st := range p.SampleType {
		if st.Type == "time" && st.Unit == "nanoseconds" {
			timeIdx = i
		}
	}
	if timeIdx < 0 {
		t.Fatalf("sample types %v, want time/nanoseconds", sampleTypes(p))
	}
	var offCPU, total int64
	for _, smp := range p.Sample {
		total += smp.Value[timeIdx]
		for _, loc := range smp.Location {
			for _, l := range loc.Line {
				if strings.HasSuffix(l.Function.Name, ".offCPUWait") {
					offCPU += smp.Value[timeIdx]
				}
			}
		}
	}
	if total <= 0 {
		t.Errorf("no wall-clock time in %d samples", len(p.Sample))
	}
	// Asleep for the whole second, sampled at 99 Hz: most of a second.
	if offCPU < int64(500*time.Millisecond) {
		t.Errorf("off-CPU goroutine has %v of wall-clock time, want most of 1s", time.Duration(offCPU))
	}
}

//go:noinline
func offCPUWait(done chan struct{}) { <-done }

func TestTraceAndTextEndpoints(t *testing.T) {
	leakcheck.Check(t)
	s := startServer(t)

	status, body := get(t, s, "/debug/pprof/trace?seconds=0.2")
	if status != http.StatusOK || !isGoTrace(body) {
		t.Errorf("trace: status %d, body starts %q; want 200 and a Go trace header", status, truncate(body))
	}

	status, body = get(t, s, "/debug/pprof/")
	if status != http.StatusOK || !bytes.Contains(body, []byte(`href="heap?debug=1"`)) {
		t.Errorf("index: status %d, body %q; want 200 listing heap", status, truncate(body))
	}
	status, body = get(t, s, "/debug/pprof/goroutine?debug=1")
	if status != http.StatusOK || !bytes.Contains(body, []byte("goroutine profile:")) {
		t.Errorf("goroutine?debug=1: status %d, body %q", status, truncate(body))
	}
	status, body = get(t, s, "/debug/pprof/cmdline")
	if status != http.StatusOK || string(body) != strings.Join(os.Args, "\x00") {
		t.Errorf("cmdline: status %d, body %q", status, truncate(body))
	}
	pc := reflect.ValueOf(offCPUWait).Pointer()
	status, body = get(t, s, fmt.Sprintf("/debug/pprof/symbol?%#x", pc))
	if want := fmt.Sprintf("%#x %s\n", pc, runtime.FuncForPC(pc).Name()); status != http.StatusOK || !strings.Contains(string(body), want) {
		t.Errorf("symbol: status %d, body %q, want it to contain %q", status, body, want)
	}

	for path, want := range map[string]int{
		"/debug/pprof/nosuchprofile":          http.StatusNotFound,
		"/debug/pprof/heap?seconds=abc":       http.StatusBadRequest,
		"/debug/pprof/heap?seconds=1&debug=1": http.StatusBadRequest,
		"/debug/pprof/delta_heap?seconds=-1":  http.StatusBadRequest,
		"/debug/fgprof?format=svg":            http.StatusBadRequest,
	} {
		if status, body := get(t, s, path); status != want {
			t.Errorf("GET %s: status %d (%s), want %d", path, status, truncate(body), want)
		}
	}
}

// isGoTrace reports whether b starts with a Go execution trace header,
// "go 1.NN trace\x00\x00\x00".
func isGoTrace(b []byte) bool {
	return bytes.HasPrefix(b, []byte("go 1.")) && bytes.Contains(b[:min(len(b), 16)], []byte(" trace\x00"))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestHealthAndReadiness(t *testing.T) {
	leakcheck.Check(t)
	var mu sync.Mutex
	synced := errors.New("informers not synced")
	s := startServer(t,
		cprofile.WithReadiness("informers", func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			return synced
		}),
		cprofile.WithReadiness("always", func(context.Context) error { return nil }),
		cprofile.WithReadinessTimeout(200*time.Millisecond),
	)

	if status, body := get(t, s, "/healthz"); status != http.StatusOK || string(body) != "ok\n" {
		t.Errorf("/healthz: %d %q, want 200 ok", status, body)
	}

	status, body := get(t, s, "/readyz")
	if status != http.StatusServiceUnavailable {
		t.Errorf("/readyz with a failing check: status %d, want 503", status)
	}
	for _, want := range []string{"[-]informers failed: informers not synced\n", "[+]always ok\n", "readyz check failed\n"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/readyz body %q lacks %q", body, want)
		}
	}

	mu.Lock()
	synced = nil
	mu.Unlock()
	if status, body := get(t, s, "/readyz"); status != http.StatusOK || !strings.Contains(string(body), "[+]informers ok\n") {
		t.Errorf("/readyz with passing checks: %d %q, want 200 naming informers ok", status, body)
	}
}

func TestReadinessTimeoutAndPanic(t *testing.T) {
	leakcheck.Check(t)
	release := make(chan struct{})
	s := startServer(t,
		cprofile.WithReadiness("slow", func(ctx context.Context) error { <-release; return nil }),
		cprofile.WithReadiness("buggy", func(context.Context) error { panic("boom") }),
		cprofile.WithReadinessTimeout(100*time.Millisecond),
	)
	status, body := get(t, s, "/readyz")
	close(release) // the late check returns, and its goroutine ends
	if status != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", status)
	}
	for _, want := range []string{"[-]slow failed: no answer within 100ms", "[-]buggy failed: panic: boom"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/readyz body %q lacks %q", body, want)
		}
	}
}

func TestShutdownEndsProfilesInFlight(t *testing.T) {
	leakcheck.Check(t)
	s, err := cprofile.Start(t.Context(), cprofile.WithAddr("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		status int
		body   []byte
		err    error
	}
	results := make(chan result, 2)
	for _, path := range []string{"/debug/fgprof?seconds=60", "/debug/pprof/delta_heap?seconds=60"} {
		go func() {
			resp, err := noKeepAlive.Get("http://" + s.Addr() + path)
			if err != nil {
				results <- result{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			results <- result{status: resp.StatusCode, body: b, err: err}
		}()
	}
	time.Sleep(300 * time.Millisecond) // let both requests start

	// Half the profiles' 60 s tells cutting them short from waiting them
	// out, with room for a loaded machine.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Shutdown took %v with 60 s profiles in flight, want them cut short", d)
	}
	for range 2 {
		if r := <-results; r.err != nil {
			t.Errorf("request in flight: %v", r.err)
		}
	}
	if _, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		t.Errorf("still listening on %s after Shutdown", s.Addr())
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown: %v, want the first's nil", err)
	}
}

func TestStopsWithContext(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithCancel(t.Context())
	s, err := cprofile.Start(ctx, cprofile.WithAddr("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := get(t, s, "/healthz"); status != http.StatusOK {
		t.Fatalf("/healthz: %d", status)
	}
	cancel()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("still listening on %s 30 s after its context ended", s.Addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Shutdown after the context's own waits for it and returns its result.
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown after cancel: %v", err)
	}
}

func TestDefaultServeMuxUntouched(t *testing.T) {
	leakcheck.Check(t)
	startServer(t)
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/fgprof", "/metrics"} {
		req, _ := http.NewRequest(http.MethodGet, path, nil)
		if _, pattern := http.DefaultServeMux.Handler(req); pattern != "" {
			t.Errorf("http.DefaultServeMux serves %s (pattern %q): something imported net/http/pprof or registered globally", path, pattern)
		}
	}
}

func TestStartErrors(t *testing.T) {
	leakcheck.Check(t)
	// A taken port is reported, and the failed Start leaves nothing behind.
	s := startServer(t)
	if _, err := cprofile.Start(t.Context(), cprofile.WithAddr(s.Addr())); err == nil || !strings.Contains(err.Error(), s.Addr()) {
		t.Errorf("Start on a taken address: err %v, want one naming %s", err, s.Addr())
	}
	for name, cfg := range map[string]cprofile.PyroscopeConfig{
		"no application":  {ServerAddress: "http://127.0.0.1:4040"},
		"no server":       {ApplicationName: "app"},
		"not a URL":       {ApplicationName: "app", ServerAddress: "pyroscope:4040"},
		"half basic auth": {ApplicationName: "app", ServerAddress: "http://127.0.0.1:4040", BasicAuthUser: "u"},
	} {
		if _, err := cprofile.Start(t.Context(), cprofile.WithAddr("127.0.0.1:0"), cprofile.WithPyroscope(cfg)); err == nil {
			t.Errorf("%s: Start accepted %+v", name, cfg)
		}
	}
}
