package leanstore

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/cachetune/cachetune/pkg/failure"
)

// retryState is the state that one informer's lists and watches share: the
// backoff of failed requests, what the last watches did, and whether the
// informer has listed. Lists and watches report through it, so that every
// failure reaches the tracker (logs, metrics, Status, the informer's
// watch-error handlers) the same way, whichever stage it happened in.
type retryState struct {
	tracker *tracker
	// backoff paces failed lists and watch starts; it resets after a success.
	backoff *backoffState
	// expiry paces re-lists after watches that expire (410) before delivering
	// anything; it resets when a watch delivers an event.
	expiry *backoffState

	// watchBroken is set when a watch ended in a failure: the next watch waits
	// out the backoff first, so that a fault repeating on every watch costs a
	// bounded number of requests.
	watchBroken atomic.Bool
	// stalled is set when the last watch ended for its silence and cleared by
	// the next event: a probe cannot tell a stalled watch from a quiet one.
	stalled atomic.Bool
	// stalls counts watches in a row that stalled before delivering anything:
	// when watches keep stalling while lists work (a proxy that black-holes
	// long requests), the informer lists again instead of watching in vain.
	stalls atomic.Int32
	synced atomic.Bool
}

func newRetryState(t *tracker, b Backoff) *retryState {
	return &retryState{tracker: t, backoff: newBackoffState(b), expiry: newBackoffState(b)}
}

// failed reports a failure and waits out the backoff, or less when probe
// says the server is healed (see waitOrHealed); false means ctx ended.
func (h *retryState) failed(ctx context.Context, f failedAttempt, err error, probe func(context.Context) error) bool {
	d := h.backoff.delay()
	h.report(ctx, f, err, d)
	return h.waitOrHealed(ctx, f, d, probe)
}

// probeEvery is how often a backing-off informer asks the server, with a
// request much cheaper than the one that failed, whether the fault is gone.
// The backoff bounds the costly retries (a whole list); the probes bound how
// long an informer stays stale after the fault is lifted: about probeEvery,
// where a backoff grown to 30 s (and jittered up to 60 s) kept it stale for
// that long. One probe a second keeps a failing informer's requests well
// under 5 a second.
const probeEvery = time.Second

// waitOrHealed waits d, but calls probe every probeEvery meanwhile and returns
// as soon as one succeeds: the failed request can be retried at once. A probe
// that fails is a failed request like any other and is reported as f, with
// the wait still left as its next delay: nothing the server refuses goes
// unreported. A nil probe just waits. False means ctx ended.
func (h *retryState) waitOrHealed(ctx context.Context, f failedAttempt, d time.Duration, probe func(context.Context) error) bool {
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
		h.report(ctx, f, err, time.Until(deadline))
	}
}

// report reports a failure after which the informer retries after next.
func (h *retryState) report(ctx context.Context, f failedAttempt, err error, next time.Duration) {
	f.Err, f.NextDelay = err, next
	h.tracker.fail(ctx, f)
}

// listed records a successful list.
func (h *retryState) listed(path ListPath, reason string, count, reused int) {
	h.backoff.reset()
	h.tracker.ok()
	h.tracker.listed(path, reason, count, reused)
	h.synced.Store(true)
}

// delivered records the first event of a watch: the watch works.
func (h *retryState) delivered() {
	h.tracker.ok()
	h.backoff.reset()
	h.expiry.reset()
	h.stalls.Store(0)
	h.stalled.Store(false)
}

// watchStalled records a watch that delivered nothing for the idle time-out.
func (h *retryState) watchStalled(ctx context.Context, idle time.Duration, events int) {
	h.watchBroken.Store(true)
	h.stalled.Store(true)
	if events == 0 {
		h.stalls.Add(1)
	}
	h.report(ctx, failedAttempt{Reason: failure.WatchStalled}, stalled(idle), 0)
}
