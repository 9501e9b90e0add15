package leanstore_test

import (
	"context"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

var srv *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.Main(m, apiserver.Options{}, &srv))
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startProxy starts a fault proxy in front of the test server, closed when
// the test ends (after its deferred calls: its informers stop first).
func startProxy(t *testing.T) *faults.Proxy {
	t.Helper()
	p, err := faults.Start(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// requestLog counts the requests a client really sends, by kind: what the server
// sees, independent of what the library reports.
type requestLog struct {
	mu    sync.Mutex
	kinds map[string]int
}

const (
	reqList          = "list"
	reqWatch         = "watch"
	reqStreamingList = "streaming-list"
)

func (l *requestLog) count(kind string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.kinds[kind]
}

// counted returns a copy of cfg whose requests for resource are counted.
func counted(cfg *rest.Config, resource string) (*rest.Config, *requestLog) {
	l := &requestLog{kinds: map[string]int{}}
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && lastSegment(r.URL.Path) == resource {
				q := r.URL.Query()
				kind := reqList
				switch {
				case q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true":
					kind = reqStreamingList
				case q.Get("watch") == "true":
					kind = reqWatch
				}
				l.mu.Lock()
				l.kinds[kind]++
				l.mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	return c, l
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func lastSegment(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
