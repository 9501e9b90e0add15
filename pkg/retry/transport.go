package retry

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/pkg/backoff"
	"github.com/cachetune/cachetune/pkg/failure"
)

// Transport is an http.RoundTripper that retries replayable requests which
// got 429, 503 or 504, with exponential backoff and full jitter, honouring
// Retry-After, within a cap on attempts and on total time. See the package
// documentation for how it shares the work with client-go's own retries.
type Transport struct {
	next http.RoundTripper
	o    options
}

// NewTransport wraps next (http.DefaultTransport when nil). It returns an
// error naming the first option out of range.
func NewTransport(next http.RoundTripper, opts ...Option) (*Transport, error) {
	o, err := build(opts)
	if err != nil {
		return nil, err
	}
	if next == nil {
		next = http.DefaultTransport
	}
	return &Transport{next: next, o: o}, nil
}

// build applies opts over the defaults and checks the result.
func build(opts []Option) (options, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	return o, o.validate()
}

// Wrap installs a Transport in cfg, under the authentication and header
// layers that client-go adds, so every client built from cfg afterwards
// retries 429, 503 and 504. It keeps any WrapTransport already set. An
// option out of range is an error, and cfg is left as it was.
func Wrap(cfg *rest.Config, opts ...Option) error {
	o, err := build(opts)
	if err != nil {
		return err
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		if rt == nil {
			rt = http.DefaultTransport
		}
		return &Transport{next: rt, o: o}
	})
	return nil
}

// retriable reports whether the transport handles a response with code.
func retriable(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

// replayable reports whether req can be sent again: it has no body, or a
// GetBody to make a fresh copy of it. A watch is never retried here (a
// reflector decides what to do when a watch fails to start), nor a request
// that upgrades the connection (exec, attach, port-forward).
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	if w := req.URL.Query().Get("watch"); w == "true" || w == "1" || strings.Contains(req.URL.Path, "/watch/") {
		return false
	}
	return req.Header.Get("Upgrade") == ""
}

// RoundTrip sends req, and again after a wait while the answer is 429, 503 or
// 504 and the caps allow. It returns the last response; when it gives up on
// one of those codes, it rewrites a Retry-After in seconds as the equivalent
// HTTP-date, so that client-go's rest client, which only acts on seconds,
// does not retry the request a second time over.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !replayable(req) {
		return t.next.RoundTrip(req)
	}
	ctx := req.Context()
	start := time.Now()
	for attempt := 1; ; attempt++ {
		resp, err := t.next.RoundTrip(req)
		if err != nil || !retriable(resp.StatusCode) {
			return resp, err
		}
		now := time.Now()
		retryAfter, _ := failure.ParseRetryAfter(resp.Header.Get("Retry-After"), now)
		wait := max(t.o.jitter(t.o.backoff.Step(attempt)), retryAfter)
		if attempt >= t.o.maxAttempts || now.Add(wait).Sub(start) > t.o.maxElapsed || pastDeadline(ctx, now.Add(wait)) {
			handOver(resp, now)
			return resp, nil
		}
		if t.o.onRetry != nil {
			t.o.onRetry(Attempt{Request: req, Attempt: attempt, StatusCode: resp.StatusCode, RetryAfter: retryAfter, Wait: wait})
		}
		next, err := rewind(req)
		if err != nil {
			// The body cannot be made again: the answer stands.
			handOver(resp, now)
			return resp, nil
		}
		drain(resp)
		if err := backoff.Sleep(ctx, wait); err != nil {
			return nil, err
		}
		req = next
	}
}

// pastDeadline reports whether ctx ends before t.
func pastDeadline(ctx context.Context, t time.Time) bool {
	d, ok := ctx.Deadline()
	return ok && d.Before(t)
}

// handOver rewrites Retry-After seconds as an HTTP-date: the same instruction
// for any HTTP client, but one client-go's rest client does not retry on.
func handOver(resp *http.Response, now time.Time) {
	v := resp.Header.Get("Retry-After")
	secs, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || secs < 0 {
		return
	}
	resp.Header.Set("Retry-After", now.Add(time.Duration(secs)*time.Second).UTC().Format(http.TimeFormat))
}

// rewind returns a copy of req with a fresh body.
func rewind(req *http.Request) (*http.Request, error) {
	next := req.Clone(req.Context())
	if req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		next.Body = body
	}
	return next, nil
}

// drain reads a little of a response body before closing it, so that the
// connection can be reused for the retry.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
}
