package retry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/backoff"
	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/retry"
)

// newTransport is retry.NewTransport over http.DefaultTransport, failing
// the test on an option out of range.
func newTransport(t *testing.T, opts ...retry.Option) *retry.Transport {
	t.Helper()
	rt, err := retry.NewTransport(nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// step is one scripted answer.
type step struct {
	code       int
	retryAfter string
}

// scripted is a server that answers with its steps in order, repeating the
// last, and records what it received.
type scripted struct {
	*httptest.Server
	mu     sync.Mutex
	steps  []step
	bodies []string
	times  []time.Time
}

func newScripted(t *testing.T, steps ...step) *scripted {
	t.Helper()
	s := &scripted{steps: steps}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.bodies)
		s.bodies = append(s.bodies, string(b))
		s.times = append(s.times, time.Now())
		st := s.steps[min(n, len(s.steps)-1)]
		s.mu.Unlock()
		if st.retryAfter != "" {
			w.Header().Set("Retry-After", st.retryAfter)
		}
		w.WriteHeader(st.code)
		fmt.Fprintf(w, "answer %d", n+1)
	}))
	t.Cleanup(func() {
		s.Close()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	})
	return s
}

func (s *scripted) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// fast keeps backoff short so that tests measure the logic, not the clock.
var fast = retry.WithBackoff(backoff.Backoff{Initial: time.Millisecond, Factor: 2, Cap: 5 * time.Millisecond})

func do(t *testing.T, rt http.RoundTripper, req *http.Request) *http.Response {
	t.Helper()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func get(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestStatusCodes(t *testing.T) {
	leakcheck.Check(t)
	tests := []struct {
		code     int
		attempts int // with a success scripted after the first answer
	}{
		{429, 2}, {503, 2}, {504, 2},
		{500, 1}, {502, 1}, {400, 1}, {401, 1}, {403, 1}, {404, 1}, {409, 1}, {410, 1}, {422, 1},
		{200, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.code), func(t *testing.T) {
			s := newScripted(t, step{code: tt.code}, step{code: 200})
			resp := do(t, newTransport(t, fast), get(t, s.URL))
			if s.attempts() != tt.attempts {
				t.Errorf("%d attempts, want %d", s.attempts(), tt.attempts)
			}
			want := tt.code
			if tt.attempts == 2 {
				want = 200
			}
			if resp.StatusCode != want {
				t.Errorf("final status %d, want %d", resp.StatusCode, want)
			}
		})
	}
}

// waits records the waits a Transport announces to WithOnRetry: what it
// decided, which no scheduling delay changes, where the time a test measures
// only grows on a loaded machine.
type waits struct {
	mu sync.Mutex
	w  []time.Duration
}

func (w *waits) option() retry.Option {
	return retry.WithOnRetry(func(a retry.Attempt) {
		w.mu.Lock()
		w.w = append(w.w, a.Wait)
		w.mu.Unlock()
	})
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.w...)
}

func (w *waits) sum() time.Duration {
	var total time.Duration
	for _, d := range w.all() {
		total += d
	}
	return total
}

// A Retry-After in seconds is the wait, not the backoff's few milliseconds:
// the one retry waits exactly 1 s, and the answer comes no sooner.
func TestRetryAfterSeconds(t *testing.T) {
	leakcheck.Check(t)
	s := newScripted(t, step{code: 429, retryAfter: "1"}, step{code: 200})
	var w waits
	start := time.Now()
	resp := do(t, newTransport(t, fast, w.option()), get(t, s.URL))
	if took := time.Since(start); resp.StatusCode != 200 || took < time.Second {
		t.Errorf("status %d after %s, want 200 after Retry-After's 1s", resp.StatusCode, took)
	}
	if got := w.all(); len(got) != 1 || got[0] != time.Second {
		t.Errorf("waits %v, want one of Retry-After's 1s", got)
	}
}

func TestRetryAfterDate(t *testing.T) {
	leakcheck.Check(t)
	// An HTTP-date has whole seconds: two seconds ahead is between one and
	// two seconds away when it is read (less if reading it came late).
	at := time.Now().Add(2 * time.Second).Truncate(time.Second)
	s := newScripted(t, step{code: 503, retryAfter: at.UTC().Format(http.TimeFormat)}, step{code: 200})
	var w waits
	resp := do(t, newTransport(t, fast, w.option()), get(t, s.URL))
	if resp.StatusCode != 200 || time.Now().Before(at) {
		t.Errorf("status %d at %s, want 200 no sooner than the date in Retry-After, %s", resp.StatusCode, time.Now().Format(time.StampMilli), at.Format(time.StampMilli))
	}
	if got := w.all(); len(got) != 1 || got[0] < 0 || got[0] > 2*time.Second {
		t.Errorf("waits %v, want one until the date, at most 2s", got)
	}
}

func TestReplayableBodies(t *testing.T) {
	leakcheck.Check(t)
	const body = `{"kind":"ConfigMap"}`
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		t.Run(method, func(t *testing.T) {
			s := newScripted(t, step{code: 429}, step{code: 503}, step{code: 200})
			req, _ := http.NewRequest(method, s.URL, strings.NewReader(body)) // sets GetBody
			resp := do(t, newTransport(t, fast), req)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d, want 200", resp.StatusCode)
			}
			if diff := cmp.Diff([]string{body, body, body}, s.bodies); diff != "" {
				t.Errorf("bodies received (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNonReplayableBodyIsNotRetried(t *testing.T) {
	leakcheck.Check(t)
	s := newScripted(t, step{code: 429, retryAfter: "1"}, step{code: 200})
	req, _ := http.NewRequest(http.MethodPost, s.URL, io.NopCloser(strings.NewReader("once"))) // no GetBody
	resp := do(t, newTransport(t, fast), req)
	if s.attempts() != 1 || resp.StatusCode != 429 {
		t.Errorf("%d attempts, status %d: want the single 429 back", s.attempts(), resp.StatusCode)
	}
	// Not the transport's call: Retry-After stays as the server sent it,
	// for the caller (client-go, say) to act on.
	if got := resp.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q, want the server's \"1\"", got)
	}
}

func TestWatchIsNotRetried(t *testing.T) {
	leakcheck.Check(t)
	for _, path := range []string{"/api/v1/pods?watch=true", "/api/v1/pods?watch=1&sendInitialEvents=true", "/api/v1/watch/pods"} {
		s := newScripted(t, step{code: 429}, step{code: 200})
		resp := do(t, newTransport(t, fast), get(t, s.URL+path))
		if s.attempts() != 1 || resp.StatusCode != 429 {
			t.Errorf("%s: %d attempts, status %d, want one 429", path, s.attempts(), resp.StatusCode)
		}
	}
}

func TestMaxAttempts(t *testing.T) {
	leakcheck.Check(t)
	s := newScripted(t, step{code: 503, retryAfter: "0"})
	var seen []retry.Attempt
	rt := newTransport(t, fast, retry.WithMaxAttempts(3), retry.WithOnRetry(func(a retry.Attempt) { seen = append(seen, a) }))
	resp := do(t, rt, get(t, s.URL))
	if s.attempts() != 3 || resp.StatusCode != 503 {
		t.Errorf("%d attempts, status %d, want 3 and the last 503", s.attempts(), resp.StatusCode)
	}
	if len(seen) != 2 || seen[0].Attempt != 1 || seen[1].Attempt != 2 || seen[1].StatusCode != 503 {
		t.Errorf("OnRetry saw %+v, want attempts 1 and 2", seen)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "answer 3" {
		t.Errorf("body %q, want the last answer's", b)
	}
}

func TestGivingUpHandsRetryAfterOverAsDate(t *testing.T) {
	leakcheck.Check(t)
	s := newScripted(t, step{code: 429, retryAfter: "7"})
	before := time.Now()
	resp := do(t, newTransport(t, fast, retry.WithMaxAttempts(1)), get(t, s.URL))
	got, err := http.ParseTime(resp.Header.Get("Retry-After"))
	if err != nil {
		t.Fatalf("Retry-After %q is no HTTP-date: %v", resp.Header.Get("Retry-After"), err)
	}
	if d := got.Sub(before.Truncate(time.Second)); d < 7*time.Second || d > 9*time.Second {
		t.Errorf("Retry-After date %s is %s ahead, want about 7s", got, d)
	}
	if d, ok := failure.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); !ok || d < 5*time.Second {
		t.Errorf("ParseRetryAfter of the handed-over header = %s %v", d, ok)
	}
}

// The cap on total time holds for the waits the transport chooses: it never
// starts a wait that would end past the cap, so the waits add up to at most
// the cap, however long each attempt itself took. The cap (1 s) leaves the
// first attempt 900 ms to answer before a retry of at most 100 ms would pass
// it: the test sees at least one retry even on a loaded machine.
func TestMaxElapsed(t *testing.T) {
	leakcheck.Check(t)
	const maxElapsed, delay = time.Second, 100 * time.Millisecond
	s := newScripted(t, step{code: 504})
	var w waits
	rt := newTransport(t, retry.WithBackoff(backoff.Backoff{Initial: delay, Factor: 2, Cap: delay}), retry.WithMaxAttempts(100), retry.WithMaxElapsed(maxElapsed), w.option())
	resp := do(t, rt, get(t, s.URL))
	if resp.StatusCode != 504 {
		t.Errorf("status %d, want the last 504", resp.StatusCode)
	}
	if sum := w.sum(); sum > maxElapsed {
		t.Errorf("waits %v add up to %s, want at most the %s cap", w.all(), sum, maxElapsed)
	}
	if n := s.attempts(); n < 2 || n != len(w.all())+1 {
		t.Errorf("%d attempts after %d waits, want a retry after each wait, and at least one", n, len(w.all()))
	}
}

// A Retry-After past the cap (or past the request's deadline) is not waited
// for at all: no wait is announced, and the answer comes back in far less
// time than any part of the wait it refused (a tenth of the cap or of the
// deadline, which a wait would have reached).
func TestRetryAfterBeyondCapsGivesUpAtOnce(t *testing.T) {
	leakcheck.Check(t)
	const maxElapsed = 10 * time.Second
	s := newScripted(t, step{code: 429, retryAfter: "60"})
	var w waits
	start := time.Now()
	resp := do(t, newTransport(t, fast, retry.WithMaxElapsed(maxElapsed), w.option()), get(t, s.URL))
	if took := time.Since(start); s.attempts() != 1 || resp.StatusCode != 429 || len(w.all()) != 0 || took > maxElapsed/10 {
		t.Errorf("%d attempts, status %d after %s and waits %v: want the 429 at once", s.attempts(), resp.StatusCode, took, w.all())
	}

	// The same when the request's own deadline comes first (and only it: the
	// default cap on total time, 30 s, would allow the wait).
	const deadline = 20 * time.Second
	s = newScripted(t, step{code: 429, retryAfter: "25"})
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	w = waits{}
	start = time.Now()
	do(t, newTransport(t, fast, w.option()), get(t, s.URL).WithContext(ctx))
	if took := time.Since(start); s.attempts() != 1 || len(w.all()) != 0 || took > deadline/10 {
		t.Errorf("%d attempts after %s and waits %v, want the 429 at once: the deadline is before Retry-After", s.attempts(), took, w.all())
	}
}

func TestCancellationStopsWaiting(t *testing.T) {
	leakcheck.Check(t)
	s := newScripted(t, step{code: 503, retryAfter: "30"})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	resp, err := newTransport(t, fast, retry.WithMaxElapsed(time.Minute)).RoundTrip(get(t, s.URL).WithContext(ctx))
	took := time.Since(start)
	if resp != nil {
		resp.Body.Close()
	}
	// Retry-After asked for 30 s: returning in a third of that is returning
	// on the cancellation, with room for a loaded machine.
	if !errors.Is(err, context.Canceled) || took > 10*time.Second {
		t.Errorf("RoundTrip = %v after %s, want context.Canceled soon after 200ms, not after Retry-After's 30s", err, took)
	}
	if s.attempts() != 1 {
		t.Errorf("%d attempts, want 1", s.attempts())
	}
}

func TestBackoffGrows(t *testing.T) {
	leakcheck.Check(t)
	// Waits with full jitter stay under min(cap, base·2ⁿ⁻¹).
	s := newScripted(t, step{code: 503})
	var waits []time.Duration
	rt := newTransport(t, retry.WithBackoff(backoff.Backoff{Initial: 10 * time.Millisecond, Factor: 2, Cap: 40 * time.Millisecond}), retry.WithMaxAttempts(6),
		retry.WithOnRetry(func(a retry.Attempt) { waits = append(waits, a.Wait) }))
	do(t, rt, get(t, s.URL))
	ceilings := []time.Duration{10, 20, 40, 40, 40}
	if len(waits) != len(ceilings) {
		t.Fatalf("waits %v, want %d", waits, len(ceilings))
	}
	for i, w := range waits {
		if w < 0 || w > ceilings[i]*time.Millisecond {
			t.Errorf("wait %d = %s, want within [0, %dms]", i+1, w, ceilings[i])
		}
	}
}

func TestBodyOfReplayedRequestIsFresh(t *testing.T) {
	leakcheck.Check(t)
	// A GetBody that fails leaves the answer as it is.
	s := newScripted(t, step{code: 429}, step{code: 200})
	req, _ := http.NewRequest(http.MethodPut, s.URL, bytes.NewReader([]byte("x")))
	req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("gone") }
	resp := do(t, newTransport(t, fast), req)
	if resp.StatusCode != 429 || s.attempts() != 1 {
		t.Errorf("status %d after %d attempts, want the 429 once", resp.StatusCode, s.attempts())
	}
}

// Options out of range are an error from NewTransport and Wrap, never
// corrected silently.
func TestInvalidOptions(t *testing.T) {
	cases := []struct {
		name string
		opt  retry.Option
		want string
	}{
		{"no attempts", retry.WithMaxAttempts(0), "WithMaxAttempts"},
		{"no time", retry.WithMaxElapsed(0), "WithMaxElapsed"},
		{"backoff without delay", retry.WithBackoff(backoff.Backoff{Factor: 2, Cap: time.Second}), "Initial must be positive"},
		{"backoff with jitter", retry.WithBackoff(backoff.Default()), "Jitter must be 0"},
		{"backoff with reset", retry.WithBackoff(backoff.Backoff{Initial: time.Second, Factor: 2, Cap: time.Second, ResetAfter: time.Minute}), "ResetAfter must be 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := retry.NewTransport(nil, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("NewTransport: err = %v, want one containing %q", err, c.want)
			}
			cfg := &rest.Config{Host: "https://example.invalid"}
			if err := retry.Wrap(cfg, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Wrap: err = %v, want one containing %q", err, c.want)
			}
			if cfg.WrapTransport != nil {
				t.Error("Wrap changed the config although an option was invalid")
			}
		})
	}
}
