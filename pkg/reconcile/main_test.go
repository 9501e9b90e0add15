package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/cachetune/cachetune/pkg/reconcile"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

var srv *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.Main(m, apiserver.Options{}, &srv))
}

// needServer skips a test under -short, when no API server was started.
func needServer(t *testing.T) {
	t.Helper()
	if srv == nil {
		t.Skip("needs the local kube-apiserver (not started with -short)")
	}
}

// quiet is a logger for tests that do not read the logs.
func quiet() logr.Logger { return logr.Discard() }

// start runs l until the test ends (or stop is called) and checks that Run
// returned nil in time.
func start(t *testing.T, l *reconcile.Loop) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("Run did not return within 30 s of its context ending")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitIdle waits until l has nothing queued, scheduled or running, for a
// moment in a row.
func waitIdle(t *testing.T, l *reconcile.Loop, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	calm := 0
	for calm < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("loop not idle after %s: %+v", timeout, l.Stats())
		}
		s := l.Stats()
		if s.Queued == 0 && s.Scheduled == 0 && s.Active == 0 {
			calm++
		} else {
			calm = 0
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// run is one reconcile as a test records it.
type run struct {
	at  time.Time
	req reconcile.Request
}

// runs records reconciles, safe for concurrent use.
type runs struct {
	mu  sync.Mutex
	all []run
}

func (r *runs) add(req reconcile.Request) {
	r.mu.Lock()
	r.all = append(r.all, run{at: time.Now(), req: req})
	r.mu.Unlock()
}

func (r *runs) of(name string) []run {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []run
	for _, x := range r.all {
		if x.req.Key.Name == name {
			out = append(out, x)
		}
	}
	return out
}

func (r *runs) count(name string) int { return len(r.of(name)) }

// logBuffer collects JSON log lines, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines decodes every line whose msg is one of msgs.
func (b *logBuffer) lines(msgs ...string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(b.buf.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		for _, msg := range msgs {
			if m["msg"] == msg {
				out = append(out, m)
			}
		}
	}
	return out
}
