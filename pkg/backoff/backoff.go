package backoff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is an exponential schedule: the n-th failure in a row waits
// Step(n) = min(Initial·Factor^(n−1), Cap), plus a random extra of up to
// Jitter·Step(n). A Schedule goes back to Initial after a success (Reset)
// and, when ResetAfter is positive, after ResetAfter has passed without a
// failure; zero ResetAfter resets on success only.
type Backoff struct {
	// Initial is the delay after the first failure; it must be positive.
	Initial time.Duration
	// Factor multiplies the delay after each further failure; at least 1
	// (1 keeps the delay constant).
	Factor float64
	// Cap is the longest delay before jitter; at least Initial.
	Cap time.Duration
	// Jitter is the random extra as a fraction of the delay: a delay d
	// becomes one in [d, d·(1+Jitter)]. At least 0.
	Jitter float64
	// ResetAfter, when positive, starts the schedule again at Initial once it
	// has passed without a failure. At least 0.
	ResetAfter time.Duration
}

// Default is client-go's reflector schedule (its default backoff manager):
// 800 ms doubling to 30 s, up to 100 % extra at random, reset after 2
// minutes without a failure. A caller that fails forever waits about 30 to
// 60 s between attempts once the ramp is over.
func Default() Backoff {
	return Backoff{Initial: 800 * time.Millisecond, Factor: 2, Cap: 30 * time.Second, Jitter: 1.0, ResetAfter: 2 * time.Minute}
}

// Validate returns an error naming the first field out of range.
func (b Backoff) Validate() error {
	var err error
	switch {
	case b.Initial <= 0:
		err = fmt.Errorf("Initial must be positive, got %s", b.Initial) //nolint:staticcheck // ST1005: the message starts with the field's name
	case math.IsNaN(b.Factor) || b.Factor < 1:
		err = fmt.Errorf("Factor must be at least 1, got %v", b.Factor) //nolint:staticcheck // ST1005: the message starts with the field's name
	case b.Cap < b.Initial:
		err = fmt.Errorf("Cap must be at least Initial (%s), got %s", b.Initial, b.Cap) //nolint:staticcheck // ST1005: the message starts with the field's name
	case math.IsNaN(b.Jitter) || b.Jitter < 0:
		err = fmt.Errorf("Jitter must not be negative, got %v", b.Jitter)
	case b.ResetAfter < 0:
		err = fmt.Errorf("ResetAfter must not be negative, got %s", b.ResetAfter)
	}
	if err != nil {
		return fmt.Errorf("invalid backoff %+v: %w", b, err)
	}
	return nil
}

// Step is the delay before jitter after the n-th failure in a row (n ≥ 1;
// smaller n count as 1). It never overflows: past Cap it is Cap.
func (b Backoff) Step(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	d := float64(b.Initial) * math.Pow(b.Factor, float64(n-1))
	if d >= float64(b.Cap) || math.IsInf(d, 0) || math.IsNaN(d) {
		return b.Cap
	}
	return time.Duration(d)
}

// Delay is Step(n) with its random extra: a value in [Step(n), Step(n)·(1+Jitter)].
func (b Backoff) Delay(n int) time.Duration { return Jitter(b.Step(n), b.Jitter) }

// Jitter is d plus a random extra of up to fraction·d: a value in
// [d, d·(1+fraction)], d itself when d or fraction is not positive. Waits
// that would coincide (clients that failed together) spread out, and none is
// shortened.
func Jitter(d time.Duration, fraction float64) time.Duration {
	if fraction <= 0 || d <= 0 {
		return d
	}
	return d + time.Duration(rand.Float64()*fraction*float64(d))
}

// MaxAttempts is the most attempts that fit in window when every attempt
// fails: the first at once, then each after at least Step(n) (jitter only
// lengthens delays, so it never raises the bound). That is 1 + the largest m
// with Step(1)+…+Step(m) ≤ window; past the ramp-up, 1 + k +
// ⌊(window − R)/Cap⌋, where k steps are shorter than Cap and R is their sum.
// ResetAfter plays no part as long as it is longer than Cap·(1+Jitter): a
// caller that fails at once on every attempt never leaves a longer gap.
//
// A Backoff without a positive Initial sets no bound: math.MaxInt.
func (b Backoff) MaxAttempts(window time.Duration) int {
	if b.Initial <= 0 {
		return math.MaxInt
	}
	attempts, sum := 1, time.Duration(0)
	for n := 1; ; n++ {
		step := b.Step(n)
		if step <= 0 || sum+step > window {
			return attempts
		}
		if step == b.Cap {
			// The rest is linear: no need to walk it step by step.
			return attempts + int((window-sum)/b.Cap)
		}
		sum += step
		attempts++
	}
}
