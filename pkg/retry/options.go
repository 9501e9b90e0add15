package retry

import (
	"math/rand/v2"
	"net/http"
	"time"
)

// Option configures a Transport.
type Option func(*options)

type options struct {
	maxAttempts int
	maxElapsed  time.Duration
	base, cap   time.Duration
	onRetry     func(Attempt)
	// jitter picks the wait before a retry from [0, ceiling]; tests replace it.
	jitter func(ceiling time.Duration) time.Duration
}

// defaults are all the defaults, in one place.
func defaults() options {
	return options{
		maxAttempts: 4,
		maxElapsed:  30 * time.Second,
		base:        500 * time.Millisecond,
		cap:         8 * time.Second,
		jitter:      fullJitter,
	}
}

// WithMaxAttempts caps the number of attempts, the first one included
// (default 4: one try and three retries). Values below 1 mean 1.
func WithMaxAttempts(n int) Option {
	return func(o *options) { o.maxAttempts = max(n, 1) }
}

// WithMaxElapsed caps the total time spent on one request, waits included
// (default 30 s). The transport does not start a wait that would end past
// it, nor past the request context's deadline: it returns the last response
// at once instead.
func WithMaxElapsed(d time.Duration) Option {
	return func(o *options) { o.maxElapsed = d }
}

// WithBackoff sets the exponential backoff: the n-th retry waits a random
// time between zero and min(ceiling, base·2ⁿ⁻¹) ("full jitter"), or the
// server's Retry-After if that is longer (defaults 500 ms and 8 s).
func WithBackoff(base, ceiling time.Duration) Option {
	return func(o *options) { o.base, o.cap = base, ceiling }
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

// backoffCeiling is min(cap, base·2^(retry-1)) for the retry-th retry.
func (o *options) backoffCeiling(retry int) time.Duration {
	d := o.base
	for i := 1; i < retry && d < o.cap; i++ {
		d *= 2
	}
	return min(d, o.cap)
}
