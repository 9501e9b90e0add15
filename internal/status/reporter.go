package status

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/reflector"
	"github.com/cachetune/cachetune/internal/shrink"
	"github.com/cachetune/cachetune/pkg/failure"
)

// Reporter records an informer's status and reports its failures: structured
// logs, counters, and the watch-error handlers registered on the informer.
type Reporter struct {
	informer, resource string
	logger             logr.Logger
	counters           *Counters

	mu       sync.Mutex
	st       Status
	handlers []cache.WatchErrorHandlerWithContext
	// reflector is what handlers get with each failure: the informer's own
	// reflector once it has reported an error itself, until then a stand-in
	// with its name and type (see standInReflector).
	reflector *cache.Reflector
}

// NewReporter returns the reporter of the informer named informer, of
// resource, reading wire (its encoding), counting into c (nil: no counters).
func NewReporter(informer, resource, wire string, logger logr.Logger, c *Counters) *Reporter {
	return &Reporter{
		informer: informer, resource: resource,
		logger:   logger.WithValues("informer", informer, "resource", resource),
		counters: c,
		st:       Status{Informer: informer, Resource: resource, Wire: wire, FailuresByCause: map[failure.Reason]int64{}},
	}
}

// Logger is the informer's logger, with its name and resource.
func (t *Reporter) Logger() logr.Logger { return t.logger }

// SetReflector sets the *cache.Reflector that handlers get with failures
// until the informer's own reflector reports one itself.
func (t *Reporter) SetReflector(r *cache.Reflector) {
	t.mu.Lock()
	t.reflector = r
	t.mu.Unlock()
}

// SetListPath records the informer's list path without a list: an informer
// that is client-go's own (reflector.ListPathClientGo) never lists through
// leanstore.
func (t *Reporter) SetListPath(path reflector.ListPath, reason string) {
	t.mu.Lock()
	t.st.ListPath, t.st.ListPathReason = path, reason
	t.mu.Unlock()
}

// Status returns a copy of the informer's status as the reporter knows it
// (the informer adds what it knows itself: synced, shard, encoded store).
func (t *Reporter) Status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.st
	s.FailuresByCause = make(map[failure.Reason]int64, len(t.st.FailuresByCause))
	for k, v := range t.st.FailuresByCause {
		s.FailuresByCause[k] = v
	}
	return s
}

// AddHandler registers a watch-error handler, called with every failure.
func (t *Reporter) AddHandler(h cache.WatchErrorHandlerWithContext) {
	t.mu.Lock()
	t.handlers = append(t.handlers, h)
	t.mu.Unlock()
}

// Fail records and reports a failure of stage reason.
func (t *Reporter) Fail(ctx context.Context, f reflector.FailedAttempt) { t.FailFrom(ctx, f, nil) }

// FailFrom is Fail for a failure the reflector r reported itself; nil means
// leanstore found it.
func (t *Reporter) FailFrom(ctx context.Context, f reflector.FailedAttempt, r *cache.Reflector) {
	now := time.Now()
	var fe *failure.Error
	if !errors.As(f.Err, &fe) || fe.Reason != f.Reason {
		fe = failure.Watcher(f.Reason, t.resource, f.Err)
	}
	t.mu.Lock()
	if t.st.ConsecutiveFailures == 0 {
		t.st.FailingSince = now
	}
	t.st.ConsecutiveFailures++
	fe.Attempt = t.st.ConsecutiveFailures
	if d, ok := failure.RetryAfter(fe); ok {
		fe.RetryAfter = d
	}
	f.Informer, f.Resource, f.Err, f.Attempt, f.Time = t.informer, t.resource, fe, fe.Attempt, now
	f.Class = failure.Classify(fe)
	t.st.LastError = fe.Error()
	t.st.LastErrorReason = f.Reason
	t.st.LastErrorCause = f.Class.Cause
	t.st.LastErrorTime = now
	t.st.FailuresByCause[f.Class.Cause]++
	if f.Reason == failure.WatchStalled {
		t.st.StalledWatches++
	}
	handlers := append([]cache.WatchErrorHandlerWithContext(nil), t.handlers...)
	if r != nil {
		t.reflector = r
	}
	r = t.reflector
	t.mu.Unlock()

	t.logger.Error(fe, "list/watch failed", "reason", f.Reason, "cause", f.Class.Cause, "code", f.Class.Code,
		"transient", f.Class.Transient, "relist", f.Relist, "streaming", f.Streaming, "probe", f.Probe,
		"attempt", f.Attempt, "nextDelay", f.NextDelay.Round(time.Millisecond).String())
	t.counters.failure(f)
	for _, h := range handlers {
		h(ctx, r, fe)
	}
}

// OK records a success: the informer is healthy again.
func (t *Reporter) OK() {
	t.mu.Lock()
	if t.st.ConsecutiveFailures > 0 {
		t.logger.Info("list/watch recovered", "after", t.st.ConsecutiveFailures, "failingFor", time.Since(t.st.FailingSince).Round(time.Millisecond).String())
	}
	t.st.ConsecutiveFailures = 0
	t.st.FailingSince = time.Time{}
	t.mu.Unlock()
}

// Listed records a completed list: its path and why it was chosen, the
// objects it held and how many of them were unchanged and kept.
func (t *Reporter) Listed(path reflector.ListPath, reason string, count, reused int) {
	t.mu.Lock()
	t.st.ListPath = path
	t.st.ListPathReason = reason
	t.st.Lists++
	t.st.LastListTime = time.Now()
	t.st.LastListCount = count
	t.st.ReusedObjects = reused
	t.mu.Unlock()
	t.counters.listed(t.informer, t.resource, path)
}

// WireChanged records the encoding the informer now reads.
func (t *Reporter) WireChanged(wire string) {
	t.mu.Lock()
	t.st.Wire = wire
	t.mu.Unlock()
}

// WatchStarted counts a watch that started.
func (t *Reporter) WatchStarted() {
	t.mu.Lock()
	t.st.WatchesStarted++
	t.mu.Unlock()
}

// The reporter is told what the list/watch loop and each list's pacer do.
var (
	_ reflector.Reporter     = (*Reporter)(nil)
	_ reflector.PaceReporter = (*Reporter)(nil)
)

// HeapBound records whether the heap bound applies to the informer's lists.
func (t *Reporter) HeapBound(off string) {
	t.mu.Lock()
	t.st.HeapBoundOff = off
	t.mu.Unlock()
}

// ForcedGC counts a collection the heap bound ran.
func (t *Reporter) ForcedGC() {
	t.mu.Lock()
	t.st.ForcedGCs++
	t.mu.Unlock()
	t.counters.forcedGC(t.informer, t.resource)
}

// Mutated records and reports mutations the mutation guard found for the
// first time.
func (t *Reporter) Mutated(fresh []*shrink.MutationError) {
	if len(fresh) == 0 {
		return
	}
	t.mu.Lock()
	t.st.Mutations += int64(len(fresh))
	t.mu.Unlock()
	for _, e := range fresh {
		t.logger.Error(e, "cached object changed in place", "object", e.Key, "path", e.Path, "holders", e.Holders)
	}
	t.counters.mutated(t.informer, t.resource, len(fresh))
}
