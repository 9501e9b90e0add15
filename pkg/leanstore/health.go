package leanstore

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/cachetune/cachetune/pkg/failure"
)

// health is the state that one informer's lists and watches share: the
// backoff of failed requests, what the last watches did, and whether the
// informer has listed. Lists and watches report through it, so that every
// failure reaches the tracker (logs, metrics, Status, the informer's
// watch-error handlers) the same way, whichever stage it happened in.
type health struct {
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
	// stalls counts watches in a row that stalled before delivering anything:
	// when watches keep stalling while lists work (a proxy that black-holes
	// long requests), the informer lists again instead of watching in vain.
	stalls atomic.Int32
	synced atomic.Bool
}

func newHealth(t *tracker, b Backoff) *health {
	return &health{tracker: t, backoff: newBackoffState(b), expiry: newBackoffState(b)}
}

// failed reports a failure and waits out the backoff; false means ctx ended.
func (h *health) failed(ctx context.Context, f failedAttempt, err error) bool {
	d := h.backoff.delay()
	h.report(ctx, f, err, d)
	return sleep(ctx, d)
}

// report reports a failure after which the informer retries after next.
func (h *health) report(ctx context.Context, f failedAttempt, err error, next time.Duration) {
	f.Err, f.NextDelay = err, next
	h.tracker.fail(ctx, f)
}

// listed records a successful list.
func (h *health) listed(path ListPath, reason string, count, reused int) {
	h.backoff.reset()
	h.tracker.ok()
	h.tracker.listed(path, reason, count, reused)
	h.synced.Store(true)
}

// delivered records the first event of a watch: the watch works.
func (h *health) delivered() {
	h.tracker.ok()
	h.backoff.reset()
	h.expiry.reset()
	h.stalls.Store(0)
}

// watchStalled records a watch that delivered nothing for the idle time-out.
func (h *health) watchStalled(ctx context.Context, idle time.Duration, events int) {
	h.watchBroken.Store(true)
	if events == 0 {
		h.stalls.Add(1)
	}
	h.report(ctx, failedAttempt{Reason: failure.WatchStalled}, stalled(idle), 0)
}
