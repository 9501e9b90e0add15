package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

var srv *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.Main(m, apiserver.Options{}, &srv))
}

// logBuffer collects JSON log lines, safe for concurrent use.
type logBuffer struct {
	mu    sync.Mutex
	lines []map[string]any
	rest  strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rest.Write(p)
	s := b.rest.String()
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			break
		}
		var m map[string]any
		if json.Unmarshal([]byte(s[:i]), &m) == nil {
			b.lines = append(b.lines, m)
		}
		s = s[i+1:]
	}
	b.rest.Reset()
	b.rest.WriteString(s)
	return len(p), nil
}

// find returns the lines for which keep holds.
func (b *logBuffer) find(keep func(map[string]any) bool) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range b.lines {
		if keep(l) {
			out = append(out, l)
		}
	}
	return out
}

// The example's main logic on the local server: it seeds five Widgets,
// reconciles each (one invalid), reacts to the demonstration's changes, and
// every reconcile logs the object and why it ran.
func TestExampleController(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver (not started with -short)")
	}
	leakcheck.Check(t)
	ns := srv.NewNamespace(t)
	var logs logBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, config{
			rest: srv.Config, namespace: ns, seed: 5, workers: 2, addr: "127.0.0.1:0", demo: true,
			logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("run did not return within 30 s of its context ending")
		}
	}
	defer stop()

	msg := func(m string) func(map[string]any) bool { return func(l map[string]any) bool { return l["msg"] == m } }
	deadline := time.Now().Add(60 * time.Second)
	for len(logs.find(msg("demo: done; the controller keeps running until interrupted"))) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the demonstration did not finish within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The endpoints answer while it runs.
	serving := logs.find(msg("serving pprof, metrics and health"))
	if len(serving) != 1 {
		t.Fatalf("no 'serving' line")
	}
	url := serving[0]["url"].(string)
	metrics := get(t, url+"/metrics")
	for _, want := range []string{
		`cachetune_reconcile_total{controller="widgets",outcome="parked"} 1`,
		`cachetune_reconcile_parked_keys{controller="widgets"} 0`,
		`cachetune_reconcile_triggers_total{controller="widgets",trigger="related-changed"}`,
		`cachetune_predicate_events_total`,
		`cachetune_reconcile_duration_seconds_bucket`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if body := get(t, url+"/readyz"); !strings.Contains(body, "[+]informers ok") {
		t.Errorf("/readyz = %q, want informers ok", body)
	}
	stop()

	// Every seeded Widget was reconciled, and its trace names it and says why.
	traced := func(l map[string]any) bool { _, ok := l["outcome"]; return ok }
	for i := range 5 {
		obj := ns + "/widget-0000" + string(rune('0'+i))
		lines := logs.find(func(l map[string]any) bool { return traced(l) && l["object"] == obj })
		if len(lines) == 0 {
			t.Errorf("no reconcile logged for %s", obj)
			continue
		}
		for _, l := range lines {
			if l["trigger"] == "" || l["controller"] != "widgets" || l["duration"] == nil {
				t.Errorf("trace line without controller, trigger or duration: %v", l)
			}
		}
		if lines[0]["trigger"] != "object-changed" {
			t.Errorf("%s first ran for %v, want object-changed", obj, lines[0]["trigger"])
		}
	}
	w0 := logs.find(func(l map[string]any) bool { return traced(l) && l["object"] == ns+"/widget-00000" })
	if len(w0) < 2 || w0[0]["outcome"] != "parked" || !strings.Contains(w0[0]["class"].(string), "InvalidSpec") ||
		w0[len(w0)-1]["outcome"] != "success" {
		t.Errorf("widget-00000 traces = %v, want parked (InvalidSpec), then success after the fix", w0)
	}
	related := logs.find(func(l map[string]any) bool {
		return traced(l) && l["object"] == ns+"/widget-00001" && l["trigger"] == "related-changed"
	})
	if len(related) == 0 {
		t.Error("no related-changed reconcile of widget-00001 after its ConfigMap was deleted")
	}
	// The status write on widget-00002 is filtered: no reconcile after it.
	var afterStatusWrite []map[string]any
	seen := false
	logs.find(func(l map[string]any) bool {
		if l["msg"] == "demo: writing widget-00002's status only" {
			seen = true
		}
		if seen && traced(l) && l["object"] == ns+"/widget-00002" {
			afterStatusWrite = append(afterStatusWrite, l)
		}
		return false
	})
	if !seen || len(afterStatusWrite) != 0 {
		t.Errorf("widget-00002 reconciled after a status-only write: %v", afterStatusWrite)
	}

	// And the cluster shows it: every Widget Ready at its generation, every
	// ConfigMap in place.
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	list, err := dyn.Resource(dataset.WidgetGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range list.Items {
		conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
		ready := false
		for _, c := range conds {
			m := c.(map[string]any)
			ready = ready || (m["type"] == "Ready" && m["status"] == "True" && m["observedGeneration"] == w.GetGeneration())
		}
		if !ready {
			t.Errorf("%s: conditions %v, want Ready=True at generation %d", w.GetName(), conds, w.GetGeneration())
		}
		if _, err := srv.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), w.GetName()+"-parts", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: %v", w.GetName(), err)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
