package reconcile

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Backoff is the per-key delay between attempts after transient failures.
// The n-th failure in a row of one key waits Step(n) = min(Base·Factor^(n−1),
// Max), plus a random extra of up to Jitter·Step(n), so that keys that failed
// together do not retry in step. A success resets the key to Base.
type Backoff struct {
	Base   time.Duration
	Factor float64
	Max    time.Duration
	Jitter float64
}

// DefaultBackoff is 800 ms doubling to 30 s with up to 50 % extra at random:
// the schedule of the seed's watcher default_backoff (and of client-go's
// reflector), applied per key. A key that fails forever reconciles at most 7
// times in its first minute and 2 times a minute after that.
func DefaultBackoff() Backoff {
	return Backoff{Base: 800 * time.Millisecond, Factor: 2, Max: 30 * time.Second, Jitter: 0.5}
}

// Step is the delay before jitter after the n-th failure in a row (n ≥ 1).
func (b Backoff) Step(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	d := float64(b.Base) * math.Pow(b.Factor, float64(n-1))
	if d >= float64(b.Max) || math.IsInf(d, 0) || math.IsNaN(d) {
		return b.Max
	}
	return time.Duration(d)
}

// Delay is Step(n) with its random extra: in [Step(n), Step(n)·(1+Jitter)].
func (b Backoff) Delay(n int) time.Duration {
	return jitter(b.Step(n), b.Jitter)
}

func jitter(d time.Duration, j float64) time.Duration {
	if j <= 0 || d <= 0 {
		return d
	}
	return d + time.Duration(rand.Float64()*j*float64(d))
}

// MaxRuns bounds the reconciles of one key that fails on every attempt,
// within a window that starts with its first failing run, when nothing else
// triggers it: 1 + the largest m with Step(1)+…+Step(m) ≤ window. Jitter only
// lengthens delays, so it never raises the bound. For a window past the
// ramp-up this is 1 + k + ⌊(window − R)/Max⌋, where k steps are shorter than
// Max and R is their sum.
func (b Backoff) MaxRuns(window time.Duration) int {
	runs, sum := 1, time.Duration(0)
	for n := 1; ; n++ {
		step := b.Step(n)
		if step <= 0 || sum+step > window {
			return runs
		}
		if step == b.Max {
			// The rest is linear: no need to walk it step by step.
			return runs + int((window-sum)/b.Max)
		}
		sum += step
		runs++
	}
}

func (b Backoff) validate() bool {
	return b.Base > 0 && b.Max >= b.Base && b.Factor >= 1 && b.Jitter >= 0
}

// limiter is the workqueue rate limiter behind a loop: per-key failure counts
// and the jittered Backoff. client-go's ItemExponentialFailureRateLimiter
// does the same without jitter.
type limiter struct {
	backoff Backoff

	mu       sync.Mutex
	failures map[cache.ObjectName]int
}

var _ workqueue.TypedRateLimiter[cache.ObjectName] = (*limiter)(nil)

func newLimiter(b Backoff) *limiter {
	return &limiter{backoff: b, failures: map[cache.ObjectName]int{}}
}

// When counts one more failure of key and returns its delay.
func (l *limiter) When(key cache.ObjectName) time.Duration {
	l.mu.Lock()
	l.failures[key]++
	n := l.failures[key]
	l.mu.Unlock()
	return l.backoff.Delay(n)
}

// NumRequeues is the number of failures in a row of key.
func (l *limiter) NumRequeues(key cache.ObjectName) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failures[key]
}

// Forget resets key: after a success, or when the key is parked.
func (l *limiter) Forget(key cache.ObjectName) {
	l.mu.Lock()
	delete(l.failures, key)
	l.mu.Unlock()
}

// len is the number of keys in backoff.
func (l *limiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.failures)
}
