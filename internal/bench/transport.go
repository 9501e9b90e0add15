package bench

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// traffic counts, on the client side, the response bytes a child reads and the
// list-path requests it sends for its resource. It wraps the child's transport
// through rest.Config.WrapTransport, under every client a mode builds.
type traffic struct {
	start    time.Time
	resource string
	bytes    atomic.Int64
	list     atomic.Int64
	watch    atomic.Int64
	watchL   atomic.Int64
	// lastList is when the latest LIST or streaming list was sent, in
	// nanoseconds since start: the start of a re-list.
	lastList atomic.Int64
}

func newTraffic(start time.Time, resource string) *traffic {
	return &traffic{start: start, resource: resource}
}

func (t *traffic) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		t.classify(r)
		resp, err := rt.RoundTrip(r)
		if resp != nil && resp.Body != nil {
			resp.Body = &countingReader{ReadCloser: resp.Body, n: &t.bytes}
		}
		return resp, err
	})
}

// classify counts a GET on the resource's collection as a LIST, a watch, or a
// streaming list (a watch asking for the initial events).
func (t *traffic) classify(r *http.Request) {
	if r.Method != http.MethodGet {
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	if !strings.HasSuffix(path, "/"+t.resource) {
		return
	}
	q := r.URL.Query()
	watch := q.Get("watch") == "true" || q.Get("watch") == "1" || strings.Contains(path, "/watch/")
	switch {
	case watch && q.Get("sendInitialEvents") == "true":
		t.watchL.Add(1)
		t.lastList.Store(int64(time.Since(t.start)))
	case watch:
		t.watch.Add(1)
	default:
		t.list.Add(1)
		t.lastList.Store(int64(time.Since(t.start)))
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
