package bench

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// traffic counts, on the client side, the response bytes a child reads and the
// list-path requests it sends for its resources. It wraps the child's transport
// through rest.Config.WrapTransport, under every client a mode builds.
//
// It can also hold the list-path requests for a while (hold, release): between
// the 410 that ends a watch and the re-list that follows, the parent writes
// the churn, and the re-list must not reach the server before the writes are
// done, nor the watch see them.
type traffic struct {
	start     time.Time
	resources []string
	bytes     atomic.Int64
	list      atomic.Int64
	watch     atomic.Int64
	watchL    atomic.Int64
	// firstList is when the first LIST or streaming list since the last
	// markList was sent, in nanoseconds since start: the start of a re-list
	// (of its first page, or of the first of several resources' lists).
	firstList atomic.Int64

	mu   sync.Mutex
	gate chan struct{} // while non-nil, list-path requests wait for it to close
}

func newTraffic(start time.Time, resources ...string) *traffic {
	return &traffic{start: start, resources: resources}
}

// hold makes list-path requests (LIST, watch, streaming list) of the
// resources wait until release.
func (t *traffic) hold() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gate == nil {
		t.gate = make(chan struct{})
	}
}

// markList forgets the lists sent so far: firstList is then the next one.
func (t *traffic) markList() { t.firstList.Store(0) }

// release lets held requests go, and those after them.
func (t *traffic) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gate != nil {
		close(t.gate)
		t.gate = nil
	}
}

// wait blocks a list-path request while the gate is held.
func (t *traffic) wait(ctx context.Context) error {
	t.mu.Lock()
	gate := t.gate
	t.mu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *traffic) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if t.listPath(r) {
			if err := t.wait(r.Context()); err != nil {
				return nil, err
			}
		}
		t.classify(r)
		resp, err := rt.RoundTrip(r)
		if resp != nil && resp.Body != nil {
			resp.Body = &countingReader{ReadCloser: resp.Body, n: &t.bytes}
		}
		return resp, err
	})
}

// listPath reports whether r is a GET on the collection of one of the
// resources: a LIST, a watch or a streaming list.
func (t *traffic) listPath(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	for _, res := range t.resources {
		if strings.HasSuffix(path, "/"+res) {
			return true
		}
	}
	return false
}

// classify counts a GET on a resource's collection as a LIST, a watch, or a
// streaming list (a watch asking for the initial events).
func (t *traffic) classify(r *http.Request) {
	if !t.listPath(r) {
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	q := r.URL.Query()
	watch := q.Get("watch") == "true" || q.Get("watch") == "1" || strings.Contains(path, "/watch/")
	switch {
	case watch && q.Get("sendInitialEvents") == "true":
		t.watchL.Add(1)
		t.firstList.CompareAndSwap(0, int64(time.Since(t.start)))
	case watch:
		t.watch.Add(1)
	default:
		t.list.Add(1)
		t.firstList.CompareAndSwap(0, int64(time.Since(t.start)))
	}
}

func (t *traffic) requests() Requests {
	return Requests{List: int(t.list.Load()), WatchList: int(t.watchL.Load()), Watch: int(t.watch.Load())}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// instrument returns a copy of c whose requests t counts and can hold.
func (t *traffic) instrument(c *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(c)
	prev := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return t.wrap(rt)
	}
	return cfg
}
