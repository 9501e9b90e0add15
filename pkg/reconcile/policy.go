package reconcile

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/backoff"
	"github.com/cachetune/cachetune/pkg/failure"
)

// Failure is a failed reconcile as the error policy and the hooks see it.
type Failure struct {
	// Key names the object.
	Key cache.ObjectName
	// Object is the object as the watched informer's cache held it when the
	// reconcile started; nil when the loop watches no informer or the object
	// was not in the cache. It is shared with the cache: read it, never
	// change it (DeepCopy first).
	Object runtime.Object
	// Generation is Object's metadata.generation (0 when unknown): the
	// generation a parked key waits to see change.
	Generation int64
	// Trigger is why the failed reconcile ran.
	Trigger Trigger
	// Err is what the reconcile returned, and Class what package failure
	// makes of it.
	Err   error
	Class failure.Class
	// Attempt counts the key's failures in a row, this one included.
	Attempt int
	// Decision is what the policy decided: set when hooks see the failure.
	Decision Decision
}

// Decision is what happens to a key after a failed reconcile.
type Decision struct {
	// Park: do not retry. The key runs again when its object's generation
	// changes (its resourceVersion, for kinds without a generation), when
	// it is deleted, when a related object changes or code enqueues it, and
	// after WithParkedRecheck if set.
	Park bool
	// After is the delay before the retry when not parked.
	After time.Duration
}

// Hook does asynchronous work for a failed reconcile: record a status
// condition, send an event or a metric to somewhere slow. Hooks run off the
// worker goroutines, a bounded number at a time (WithHookConcurrency), each
// under a time limit (WithHookTimeout) that ctx carries; a hook must honour
// ctx. Its error is logged and counted, never retried.
type Hook func(ctx context.Context, f Failure) error

// policy turns a classified failure into a Decision:
//
//	permanent (400, 401, 403, 404, 422, InvalidSpec, ...)  park
//	resourceVersion conflict (409), first conflictRetries   conflictDelay, jittered
//	anything else (network, time-out, 429, 5xx, unknown)    the key's backoff, or
//	                                                          the server's Retry-After if longer
type policy struct {
	conflictDelay   time.Duration
	conflictRetries int
	jitter          float64
}

// decide needs f.Class, f.Attempt and f.Err, and delay, the wait the key's
// exponential backoff gives this attempt.
func (p policy) decide(f Failure, delay time.Duration) Decision {
	c := f.Class
	switch {
	case c.Permanent:
		return Decision{Park: true}
	case c.Cause == failure.Conflict && f.Attempt <= p.conflictRetries:
		// The write lost a race with another writer; the cache will hold the
		// new version within moments, and a retry on it will likely succeed.
		// Waiting out an exponential backoff here only delays the work.
		return Decision{After: backoff.Jitter(p.conflictDelay, p.jitter)}
	}
	d := delay
	if ra, ok := failure.RetryAfter(f.Err); ok && ra > d {
		d = ra
	}
	return Decision{After: d}
}
