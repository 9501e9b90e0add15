package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// hookRunner runs hooks off the worker goroutines: at most cap(slots) at a
// time, each under a time limit. A status update from the failing worker
// would hold it for a round trip; here it is done off the worker, without an
// unbounded goroutine per failure.
type hookRunner struct {
	slots   chan struct{}
	timeout time.Duration
	wg      sync.WaitGroup
}

func newHookRunner(concurrency int, timeout time.Duration) *hookRunner {
	return &hookRunner{slots: make(chan struct{}, concurrency), timeout: timeout}
}

// hookResult is how a hook call ended, for metrics.
type hookResult string

const (
	hookOK      hookResult = "ok"
	hookError   hookResult = "error"
	hookTimeout hookResult = "timeout"
	hookSkipped hookResult = "skipped" // the loop stopped while waiting for a slot
)

// submit runs fn on a goroutine of its own once a slot is free, waiting for
// one while ctx lasts; done receives the outcome. fn's context keeps ctx's
// values but not its cancellation (a status write in flight is worth
// finishing when the loop stops) and ends after the time-out.
func (h *hookRunner) submit(ctx context.Context, fn func(context.Context) error, done func(hookResult, error)) {
	select {
	case h.slots <- struct{}{}:
	default:
		select {
		case h.slots <- struct{}{}:
		case <-ctx.Done():
			done(hookSkipped, ctx.Err())
			return
		}
	}
	h.wg.Go(func() {
		defer func() { <-h.slots }()
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.timeout)
		defer cancel()
		err := call(hctx, fn)
		switch {
		case err == nil:
			done(hookOK, nil)
		case errors.Is(hctx.Err(), context.DeadlineExceeded):
			done(hookTimeout, err)
		default:
			done(hookError, err)
		}
	})
}

// call runs fn, turning a panic into an error: a hook must not take the
// process down.
func call(ctx context.Context, fn func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("hook panicked: %v", r)
		}
	}()
	return fn(ctx)
}

// wait returns when every submitted hook has returned.
func (h *hookRunner) wait() { h.wg.Wait() }
