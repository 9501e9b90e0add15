package reflector

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cachetune/cachetune/pkg/backoff"
	"github.com/cachetune/cachetune/pkg/failure"
)

// ErrStalled is the error of a watch silent for longer than the idle timeout.
var ErrStalled = errors.New("watch stalled")

// StalledFor is ErrStalled for a watch silent for idle.
func StalledFor(idle time.Duration) error {
	return fmt.Errorf("%w: no event or bookmark for %s", ErrStalled, idle)
}

// RetryState is the state that one informer's lists and watches share: the
// backoff of failed requests, what the last watches did, and whether the
// informer has listed. Lists and watches report through it, so that every
// failure reaches the Reporter, leanstore's status reporter (logs, metrics, Status, the informer's
// watch-error handlers) the same way, whichever stage it happened in.
type RetryState struct {
	reporter Reporter
	// Backoff paces failed lists and watch starts; it resets after a success.
	Backoff *BackoffState
	// Expiry paces re-lists after watches that expire (410) before delivering
	// anything; it resets when a watch delivers an event.
	Expiry *BackoffState

	// WatchBroken is set when a watch ended in a failure: the next watch waits
	// out the backoff first, so that a fault repeating on every watch costs a
	// bounded number of requests.
	WatchBroken atomic.Bool
	// Stalled is set when the last watch ended for its silence and cleared by
	// the next event: a probe cannot tell a stalled watch from a quiet one.
	Stalled atomic.Bool
	// Stalls counts watches in a row that stalled before delivering anything:
	// when watches keep stalling while lists work (a proxy that black-holes
	// long requests), the informer lists again instead of watching in vain.
	Stalls atomic.Int32
	// Synced is set once the informer has listed.
	Synced atomic.Bool
}

// NewRetryState returns the retry state of an informer that reports to r and
// backs off by b.
func NewRetryState(r Reporter, b backoff.Backoff) *RetryState {
	return &RetryState{reporter: r, Backoff: NewBackoffState(b), Expiry: NewBackoffState(b)}
}

// Failed reports a failure and waits out the backoff, or less when probe
// says the server is healed (see WaitOrHealed); false means ctx ended.
func (h *RetryState) Failed(ctx context.Context, f FailedAttempt, err error, probe func(context.Context) error) bool {
	d := h.Backoff.Delay()
	h.Report(ctx, f, err, d)
	return h.WaitOrHealed(ctx, f, d, probe)
}

// probeEvery is how often a backing-off informer asks the server, with a
// request much cheaper than the one that failed, whether the fault is gone.
// The backoff bounds the costly retries (a whole list); the probes bound how
// long an informer stays stale after the fault is lifted: about probeEvery,
// where a backoff grown to 30 s (and jittered up to 60 s) kept it stale for
// that long. One probe a second keeps a failing informer's requests well
// under 5 a second.
const probeEvery = time.Second

// WaitOrHealed waits d, but calls probe every probeEvery meanwhile and returns
// as soon as one succeeds: the failed request can be retried at once. A probe
// that fails is a failed request like any other and is reported as f, with
// the wait still left as its next delay: nothing the server refuses goes
// unreported. A nil probe just waits. False means ctx ended.
func (h *RetryState) WaitOrHealed(ctx context.Context, f FailedAttempt, d time.Duration, probe func(context.Context) error) bool {
	if probe == nil || d <= probeEvery {
		return sleep(ctx, d)
	}
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= probeEvery {
			return sleep(ctx, left)
		}
		if !sleep(ctx, probeEvery) {
			return false
		}
		err := probe(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		f.Probe = true
		h.Report(ctx, f, err, time.Until(deadline))
	}
}

// Report reports a failure after which the informer retries after next.
func (h *RetryState) Report(ctx context.Context, f FailedAttempt, err error, next time.Duration) {
	f.Err, f.NextDelay = err, next
	h.reporter.Fail(ctx, f)
}

// Listed records a successful list.
func (h *RetryState) Listed(path ListPath, reason string, count, reused int) {
	h.Backoff.Reset()
	h.reporter.OK()
	h.reporter.Listed(path, reason, count, reused)
	h.Synced.Store(true)
}

// Delivered records the first event of a watch: the watch works.
func (h *RetryState) Delivered() {
	h.reporter.OK()
	h.Backoff.Reset()
	h.Expiry.Reset()
	h.Stalls.Store(0)
	h.Stalled.Store(false)
}

// WatchHeld records a watch that stayed open for a moment without an error,
// before its first event: it works, and the failures in a row end. After a
// stall it proves nothing (a stalled watch is as quiet as a working one), so
// then only an event does.
func (h *RetryState) WatchHeld() {
	if !h.Stalled.Load() {
		h.reporter.OK()
	}
}

// WatchStalled records a watch that delivered nothing for the idle time-out.
func (h *RetryState) WatchStalled(ctx context.Context, idle time.Duration, events int) {
	h.WatchBroken.Store(true)
	h.Stalled.Store(true)
	if events == 0 {
		h.Stalls.Add(1)
	}
	h.Report(ctx, FailedAttempt{Reason: failure.WatchStalled}, StalledFor(idle), 0)
}
