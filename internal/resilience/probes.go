package resilience

import (
	"net/http"
	"sync/atomic"
)

// probeCounter counts the informer's probes: GET lists of one object
// (limit=1), which leanstore sends about once a second while it backs off to
// learn whether the server is healed. The proxy counts every request alike;
// telling probes from costly retries lets a test hold each to its own bound:
// the costly ones to the backoff's, the probes to one a second.
type probeCounter struct {
	next   http.RoundTripper
	probes *atomic.Int64
}

func (c probeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if isProbe(req) {
		c.probes.Add(1)
	}
	return c.next.RoundTrip(req)
}

// isProbe reports whether req lists one object: a GET without watch, with
// limit=1. Informers page their lists by hundreds (client-go 500), so no
// other list of theirs asks for one.
func isProbe(req *http.Request) bool {
	q := req.URL.Query()
	return req.Method == http.MethodGet && q.Get("limit") == "1" && q.Get("watch") == "" && q.Get("sendInitialEvents") == ""
}
