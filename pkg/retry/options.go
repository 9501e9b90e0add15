package retry

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/cachetune/cachetune/pkg/backoff"
)

// Option configures a Transport. Options store what they are given; an
// option out of range is an error from NewTransport (and Wrap), never
// silently corrected.
type Option func(*options)

type options struct {
	maxAttempts int
	maxElapsed  time.Duration
	backoff     backoff.Backoff
	onRetry     func(Attempt)
	// jitter picks the wait before a retry from [0, ceiling]; tests replace it.
	jitter func(ceiling time.Duration) time.Duration
}

// defaults are all the defaults, in one place.
func defaults() options {
	return options{
		maxAttempts: 4,
		maxElapsed:  30 * time.Second,
		backoff:     backoff.Backoff{Initial: 500 * time.Millisecond, Factor: 2, Cap: 8 * time.Second},
		jitter:      fullJitter,
	}
}

// validate returns the first option out of range.
func (o *options) validate() error {
	switch {
	case o.maxAttempts < 1:
		return fmt.Errorf("retry: WithMaxAttempts: need at least 1 attempt, got %d", o.maxAttempts)
	case o.maxElapsed <= 0:
		return fmt.Errorf("retry: WithMaxElapsed: must be positive, got %s", o.maxElapsed)
	case o.backoff.Jitter != 0:
		return errors.New("retry: WithBackoff: Jitter must be 0: each wait is drawn from [0, Step(n)] (full jitter) already")
	case o.backoff.ResetAfter != 0:
		return errors.New("retry: WithBackoff: ResetAfter must be 0: every request starts the schedule afresh")
	}
	if err := o.backoff.Validate(); err != nil {
		return fmt.Errorf("retry: WithBackoff: %w", err)
	}
	return nil
}

// WithMaxAttempts caps the number of attempts, the first one included
// (default 4: one try and three retries); at least 1.
func WithMaxAttempts(n int) Option {
	return func(o *options) { o.maxAttempts = n }
}

// WithMaxElapsed caps the total time spent on one request, waits included
// (default 30 s; must be positive). The transport does not start a wait that would end past
// it, nor past the request context's deadline: it returns the last response
// at once instead.
func WithMaxElapsed(d time.Duration) Option {
	return func(o *options) { o.maxElapsed = d }
}

// WithBackoff sets the exponential backoff: the n-th retry waits a random
// time between zero and b.Step(n) = min(Cap, Initial·Factorⁿ⁻¹) ("full
// jitter"), or the server's Retry-After if that is longer. The default is
// {Initial: 500 ms, Factor: 2, Cap: 8 s}. Full jitter spreads the clients
// that one overload turned away over the whole interval, so b.Jitter must be
// 0; one request's retries never span a quiet period, so b.ResetAfter must
// be 0 too.
func WithBackoff(b backoff.Backoff) Option {
	return func(o *options) { o.backoff = b }
}

// WithOnRetry calls fn before each wait, for logs and metrics. It runs on the
// request's goroutine and must not block.
func WithOnRetry(fn func(Attempt)) Option {
	return func(o *options) { o.onRetry = fn }
}

// Attempt describes a retry about to happen.
type Attempt struct {
	// Request is the request being retried.
	Request *http.Request
	// Attempt is the number of the attempt that failed (1 for the first).
	Attempt int
	// StatusCode is the status that attempt got: 429, 503 or 504.
	StatusCode int
	// RetryAfter is the server's Retry-After, zero if it gave none.
	RetryAfter time.Duration
	// Wait is how long the transport waits before the next attempt.
	Wait time.Duration
}

func fullJitter(ceiling time.Duration) time.Duration {
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling + 1)
}
