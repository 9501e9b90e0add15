package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/cachetune/cachetune/pkg/failure"
)

// Loop runs a Func for the keys its informers and code enqueue, on a
// client-go workqueue (workqueue.TypedRateLimitingInterface of
// cache.ObjectName): a fixed number of workers, one reconcile per key at a
// time, duplicates merged, and an error policy with per-key backoff. Create
// it with New, connect informers with Watch and WatchRelated, and Run it.
type Loop struct {
	name    string
	fn      Func
	o       options
	err     error // a configuration error, reported by Run
	policy  policy
	limiter *limiter
	hooks   *hookRunner
	metrics *metrics
	log     *slog.Logger
	active  atomic.Int64

	mu    sync.Mutex
	state loopState
	// queue is nil until Run: it starts goroutines, which must not outlive
	// a loop that never runs.
	queue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// pending holds, per key, why and from when its next reconcile runs. The
	// workqueue only schedules: a key it hands out with no pending entry had
	// its reasons served by an earlier run and is skipped.
	pending map[cache.ObjectName]*pending
	// parked holds the keys whose last reconcile failed permanently, with the
	// object version they failed on: events of that same version are
	// dropped.
	parked  map[cache.ObjectName]version
	primary cache.Store
	watches []watched
}

type loopState int

const (
	stateNew loopState = iota
	stateRunning
	stateStopped
)

// pending is the next reconcile of a key: the reasons merged so far, and the
// earliest time any of them asked for.
type pending struct {
	trigger Trigger
	readyAt time.Time
}

// version identifies the state of an object a reconcile failed on.
type version struct {
	generation      int64
	resourceVersion string
}

// same reports whether an event about m shows the object a parked reconcile
// failed on: same generation, or, for kinds without one (ConfigMaps), same
// resourceVersion. An unknown version matches nothing.
func (v version) same(m interface {
	GetGeneration() int64
	GetResourceVersion() string
}) bool {
	if v.generation != 0 {
		return m.GetGeneration() == v.generation
	}
	return v.resourceVersion != "" && m.GetResourceVersion() == v.resourceVersion
}

type watched struct {
	informer cache.SharedIndexInformer
	reg      cache.ResourceEventHandlerRegistration
}

// New returns a loop named name (in logs, metrics and the workqueue) that
// reconciles with fn. Configuration errors are reported by Run.
func New(name string, fn Func, opts ...Option) *Loop {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	l := &Loop{
		name:    name,
		fn:      fn,
		o:       o,
		policy:  policy{conflictDelay: o.conflictDelay, conflictRetries: o.conflictRetries, jitter: o.backoff.Jitter},
		limiter: newLimiter(o.backoff),
		hooks:   newHookRunner(max(o.hookConcurrency, 1), o.hookTimeout),
		log:     o.logger.With("controller", name),
		pending: map[cache.ObjectName]*pending{},
		parked:  map[cache.ObjectName]version{},
	}
	var errs []error
	if name == "" {
		errs = append(errs, errors.New("empty name"))
	}
	if fn == nil {
		errs = append(errs, errors.New("nil Func"))
	}
	if err := o.validate(); err != nil {
		errs = append(errs, err)
	}
	l.metrics = newMetrics(name, l)
	if o.registerer != nil {
		if err := o.registerer.Register(l.metrics); err != nil {
			errs = append(errs, fmt.Errorf("register metrics: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		l.err = fmt.Errorf("reconcile: loop %q: %w", name, err)
	}
	return l
}

// Name is the loop's name.
func (l *Loop) Name() string { return l.name }

// Run waits until every watched informer has synced and delivered its
// initial objects, then reconciles until ctx ends. It then stops taking
// work, lets the reconciles in flight finish (their context is ctx, now
// done), drops the keys still queued, waits for running hooks (each bounded
// by its time-out), removes its event handlers, and returns: no goroutine of
// the loop is left. Run returns an error only for a misconfigured loop or a
// second call; a loop runs once.
func (l *Loop) Run(ctx context.Context) error {
	if l.err != nil {
		return l.err
	}
	l.mu.Lock()
	if l.state != stateNew {
		l.mu.Unlock()
		return fmt.Errorf("reconcile: loop %q: Run called twice", l.name)
	}
	q := workqueue.NewTypedRateLimitingQueueWithConfig[cache.ObjectName](l.limiter,
		workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: l.name})
	l.queue, l.state = q, stateRunning
	now := time.Now()
	for key, p := range l.pending { // enqueued before Run
		schedule(q, key, p.readyAt.Sub(now))
	}
	watches := slices.Clone(l.watches)
	l.mu.Unlock()

	var workers sync.WaitGroup
	if l.waitForSync(ctx, watches) {
		l.log.Info("reconcile: starting workers", "workers", l.o.workers)
		for range l.o.workers {
			workers.Go(func() {
				for l.next(ctx, q) {
				}
			})
		}
	}
	<-ctx.Done()

	l.mu.Lock()
	l.state = stateStopped // enqueue is a no-op from here on
	l.mu.Unlock()
	q.ShutDownWithDrain() // returns when the reconciles in flight are done
	q.ShutDown()          // stops the delaying queue's goroutine
	workers.Wait()
	l.hooks.wait()
	for _, w := range watches {
		_ = w.informer.RemoveEventHandler(w.reg)
	}
	l.mu.Lock()
	clear(l.pending)
	l.mu.Unlock()
	l.log.Info("reconcile: stopped")
	return nil
}

// waitForSync waits for the watched informers' handlers to have seen every
// initial object; false when ctx ended first.
func (l *Loop) waitForSync(ctx context.Context, watches []watched) bool {
	if len(watches) == 0 {
		return true
	}
	synced := make([]cache.InformerSynced, len(watches))
	for i, w := range watches {
		synced[i] = w.reg.HasSynced
	}
	l.log.Info("reconcile: waiting for informers to sync", "informers", len(watches))
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		l.log.Info("reconcile: stopped before the informers synced")
		return false
	}
	return true
}

// next runs one key off the queue; false when the queue has shut down.
func (l *Loop) next(ctx context.Context, q workqueue.TypedRateLimitingInterface[cache.ObjectName]) bool {
	key, shutdown := q.Get()
	if shutdown {
		return false
	}
	defer q.Done(key)
	if ctx.Err() != nil {
		return true // stopping: what is still queued is dropped
	}
	p, ok, wait := l.take(key)
	if wait > 0 {
		// The delaying queue keeps one time per key, the earliest: it fired
		// for an older schedule than the one pending now. Put the key back
		// for the time its reasons asked for.
		q.AddAfter(key, wait)
	}
	if ok {
		l.process(ctx, key, p)
	}
	return true
}

// take removes and returns key's pending entry if it is due.
func (l *Loop) take(key cache.ObjectName) (p pending, ok bool, wait time.Duration) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e, found := l.pending[key]
	if !found {
		l.metrics.merged.Inc()
		return pending{}, false, 0
	}
	if w := e.readyAt.Sub(now); w > 0 {
		return pending{}, false, w
	}
	delete(l.pending, key)
	return *e, true, 0
}

// process runs one reconcile and applies the outcome.
func (l *Loop) process(ctx context.Context, key cache.ObjectName, p pending) {
	obj, ver := l.lookup(key)
	req := Request{Key: key, Trigger: p.trigger, Attempt: l.limiter.NumRequeues(key)}
	rctx := ctx
	if l.o.timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, l.o.timeout)
		defer cancel()
	}

	l.active.Add(1)
	start := time.Now()
	res, err := l.call(rctx, req)
	t := trace{req: req, duration: time.Since(start), queued: start.Sub(p.readyAt), generation: ver.generation}
	l.active.Add(-1)

	switch {
	case err == nil:
		l.limiter.Forget(key)
		l.mu.Lock()
		delete(l.parked, key)
		l.mu.Unlock()
		t.outcome = outcomeSuccess
		if res.RequeueAfter > 0 {
			t.outcome, t.next = outcomeRequeue, res.RequeueAfter
			l.enqueue(key, Requeued, res.RequeueAfter, false)
		}
	case ctx.Err() != nil:
		// The loop is stopping: the error is the cancellation, not the
		// object's fault, and there is nobody left to retry.
		t.outcome, t.err = outcomeCanceled, err
	default:
		l.fail(ctx, &t, obj, ver, err)
	}
	l.record(t)
}

// fail applies the error policy to a failed reconcile.
func (l *Loop) fail(ctx context.Context, t *trace, obj runtime.Object, ver version, err error) {
	key := t.req.Key
	f := Failure{
		Key: key, Object: obj, Generation: ver.generation, Trigger: t.req.Trigger,
		Err: err, Class: failure.Classify(err), Attempt: t.req.Attempt + 1,
	}
	f.Decision = l.policy.decide(f, l.limiter.When(key))
	t.err, t.class = err, f.Class
	if f.Decision.Park {
		l.limiter.Forget(key)
		l.mu.Lock()
		l.parked[key] = ver
		l.mu.Unlock()
		t.outcome = outcomeParked
		if d := l.o.parkedRecheck; d > 0 {
			t.next = d
			l.enqueue(key, Retry, d, false)
		}
		if l.o.onPermanent != nil {
			l.runHook(ctx, "permanent", l.o.onPermanent, f)
		}
	} else {
		t.outcome, t.next = outcomeRetry, f.Decision.After
		l.enqueue(key, Retry, f.Decision.After, false)
	}
	if l.o.onError != nil {
		l.runHook(ctx, "error", l.o.onError, f)
	}
}

// call runs the Func, turning a panic into a transient error: one bad object
// must not take the controller down, and the backoff keeps it from spinning.
func (l *Loop) call(ctx context.Context, req Request) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			l.log.Error("reconcile: panic", "object", req.Key.String(), "panic", r, "stack", string(debug.Stack()))
			err = failure.Reconcile(failure.ReconcileFailed, req.Key.String(), fmt.Errorf("panic: %v", r))
		}
	}()
	return l.fn(ctx, req)
}

// runHook hands hook to the hook runner; the worker waits only when every
// hook slot is busy.
func (l *Loop) runHook(ctx context.Context, name string, hook Hook, f Failure) {
	l.hooks.submit(ctx, func(ctx context.Context) error { return hook(ctx, f) }, func(r hookResult, err error) {
		l.metrics.hooks.WithLabelValues(name, string(r)).Inc()
		if err != nil {
			l.log.Warn("reconcile: hook failed", "hook", name, "object", f.Key.String(), "result", string(r), "error", err)
		}
	})
}

// lookup finds key in the watched informer's cache: the object, and the
// version a parked key waits to see change.
func (l *Loop) lookup(key cache.ObjectName) (runtime.Object, version) {
	l.mu.Lock()
	store := l.primary
	l.mu.Unlock()
	if store == nil {
		return nil, version{}
	}
	item, exists, err := store.GetByKey(key.String())
	if err != nil || !exists {
		return nil, version{}
	}
	obj, _ := item.(runtime.Object)
	m, err := meta.Accessor(item)
	if err != nil {
		return obj, version{}
	}
	return obj, version{generation: m.GetGeneration(), resourceVersion: m.GetResourceVersion()}
}

// Enqueue queues key for a reconcile now, with trigger Enqueued. A parked
// key is unparked: code that enqueues knows something changed.
func (l *Loop) Enqueue(key cache.ObjectName) { l.enqueue(key, Enqueued, 0, true) }

// EnqueueAfter queues key for a reconcile after d, with trigger Enqueued.
func (l *Loop) EnqueueAfter(key cache.ObjectName, d time.Duration) {
	l.enqueue(key, Enqueued, d, true)
}

// enqueue records trigger t for key, due after delay, and schedules it.
func (l *Loop) enqueue(key cache.ObjectName, t Trigger, delay time.Duration, unpark bool) {
	l.mu.Lock()
	if unpark {
		delete(l.parked, key)
	}
	q := l.recordLocked(key, t, delay)
	l.mu.Unlock()
	if q != nil {
		schedule(q, key, delay)
	}
}

// recordLocked merges trigger t, due after delay, into key's pending entry
// and returns the queue to schedule it on: nil before Run (Run schedules
// what is pending) and after the loop stopped (nothing is recorded then).
func (l *Loop) recordLocked(key cache.ObjectName, t Trigger, delay time.Duration) workqueue.TypedRateLimitingInterface[cache.ObjectName] {
	if l.state == stateStopped {
		return nil
	}
	readyAt := time.Now().Add(delay)
	if p := l.pending[key]; p != nil {
		p.trigger |= t
		if readyAt.Before(p.readyAt) {
			p.readyAt = readyAt
		}
	} else {
		l.pending[key] = &pending{trigger: t, readyAt: readyAt}
	}
	return l.queue
}

func schedule(q workqueue.TypedRateLimitingInterface[cache.ObjectName], key cache.ObjectName, delay time.Duration) {
	if delay <= 0 {
		q.Add(key)
	} else {
		q.AddAfter(key, delay)
	}
}

// Stats is a snapshot of a loop's keys.
type Stats struct {
	// Queued keys are due and wait for a worker (or for their previous
	// reconcile to end); OldestQueued is how long the longest has waited.
	Queued       int
	OldestQueued time.Duration
	// Scheduled keys wait for a time: a backoff, a RequeueAfter, a debounce.
	Scheduled int
	// InBackoff keys failed their last reconcile with a transient error.
	InBackoff int
	// Parked keys failed with a permanent error and wait for a change.
	Parked int
	// Active is the number of reconciles running now.
	Active int
}

// Stats reports the loop's keys now.
func (l *Loop) Stats() Stats {
	now := time.Now()
	l.mu.Lock()
	s := Stats{Parked: len(l.parked)}
	for _, p := range l.pending {
		if age := now.Sub(p.readyAt); age >= 0 {
			s.Queued++
			s.OldestQueued = max(s.OldestQueued, age)
		} else {
			s.Scheduled++
		}
	}
	l.mu.Unlock()
	s.InBackoff = l.limiter.len()
	s.Active = int(l.active.Load())
	return s
}
