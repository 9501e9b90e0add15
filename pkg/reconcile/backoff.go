package reconcile

import (
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/cachetune/cachetune/pkg/backoff"
)

// Backoff is the per-key delay between attempts after transient failures:
// backoff.Backoff, the library's one schedule. The n-th failure in a row of
// one key waits Step(n) = min(Initial·Factor^(n−1), Cap), plus a random extra
// of up to Jitter·Step(n), so that keys that failed together do not retry in
// step. A success resets the key to Initial, and so does a quiet period of
// ResetAfter when it is positive.
type Backoff = backoff.Backoff

// DefaultBackoff is client-go's reflector schedule (800 ms doubling to 30 s)
// applied per key, with up to 50 % extra at random instead of the
// reflector's 100 %, and no reset by time (a success resets the key). Half
// the jitter is a choice: keys spread out enough, and the bound a failing
// key costs stays close to its jitter-free value (see Backoff.MaxAttempts).
// A key that fails forever reconciles at most 7 times in its first minute
// and 2 times a minute after that.
func DefaultBackoff() Backoff {
	b := backoff.Default()
	b.Jitter = 0.5
	b.ResetAfter = 0
	return b
}

// limiter is the workqueue rate limiter behind a loop: one backoff.Schedule
// per failing key. client-go's ItemExponentialFailureRateLimiter does the
// same without jitter.
type limiter struct {
	backoff Backoff

	mu   sync.Mutex
	keys map[cache.ObjectName]*backoff.Schedule
}

var _ workqueue.TypedRateLimiter[cache.ObjectName] = (*limiter)(nil)

func newLimiter(b Backoff) *limiter {
	return &limiter{backoff: b, keys: map[cache.ObjectName]*backoff.Schedule{}}
}

// When counts one more failure of key and returns its delay.
func (l *limiter) When(key cache.ObjectName) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.keys[key]
	if !ok {
		s = backoff.NewSchedule(l.backoff)
		l.keys[key] = s
	}
	return s.Next()
}

// NumRequeues is the number of failures in a row of key.
func (l *limiter) NumRequeues(key cache.ObjectName) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.keys[key]; s != nil {
		return s.Failures()
	}
	return 0
}

// Forget resets key: after a success, or when the key is parked.
func (l *limiter) Forget(key cache.ObjectName) {
	l.mu.Lock()
	delete(l.keys, key)
	l.mu.Unlock()
}

// len is the number of keys in backoff.
func (l *limiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}
