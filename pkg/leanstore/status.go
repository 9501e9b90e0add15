package leanstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/reflector"
	"github.com/cachetune/cachetune/pkg/failure"
)

// ListPath is how an informer's last list was served.
type ListPath = reflector.ListPath

const (
	// ListPathNone: no list has completed yet.
	ListPathNone = reflector.ListPathNone
	// ListPathStreaming: a streaming list (watch with sendInitialEvents).
	ListPathStreaming = reflector.ListPathStreaming
	// ListPathPaged: a paged LIST.
	ListPathPaged = reflector.ListPathPaged
	// ListPathClientGo: the informer is client-go's own (the clientset has no REST
	// client, e.g. a fake clientset in unit tests); only stripping applies.
	ListPathClientGo = reflector.ListPathClientGo
)

// failedAttempt is one failed list or watch attempt of an informer
// (reflector.FailedAttempt): what the status reporter records, logs and counts.
type failedAttempt = reflector.FailedAttempt

// Status is the state of one informer's list-and-watch path.
type Status struct {
	Informer string   `json:"informer"`
	Resource string   `json:"resource"`
	Synced   bool     `json:"synced"`
	Wire     string   `json:"wire"`
	ListPath ListPath `json:"listPath"`
	// ListPathReason says why the list path was chosen, e.g. why a streaming list
	// fell back to LIST.
	ListPathReason string    `json:"listPathReason,omitempty"`
	Lists          int       `json:"lists"`
	LastListTime   time.Time `json:"lastListTime,omitzero"`
	LastListCount  int       `json:"lastListCount"`
	// ReusedObjects counts objects of the last list that were unchanged and kept.
	ReusedObjects       int            `json:"reusedObjects"`
	LastError           string         `json:"lastError,omitempty"`
	LastErrorReason     failure.Reason `json:"lastErrorReason,omitempty"`
	LastErrorCause      failure.Reason `json:"lastErrorCause,omitempty"`
	LastErrorTime       time.Time      `json:"lastErrorTime,omitzero"`
	FailingSince        time.Time      `json:"failingSince,omitzero"`
	ConsecutiveFailures int            `json:"consecutiveFailures"`
	// FailuresByCause counts failures by their cause, e.g. Gone, Forbidden.
	FailuresByCause map[failure.Reason]int64 `json:"failuresByCause,omitempty"`
	WatchesStarted  int64                    `json:"watchesStarted"`
	StalledWatches  int64                    `json:"stalledWatches"`
	// ForcedGCs counts the garbage collections the heap bound ran during lists
	// (WithHeapBound), at most maxForcedPerList a list.
	ForcedGCs int64 `json:"forcedGCs"`
	// HeapBoundOff says why the heap bound did not apply to the last list,
	// e.g. "GOGC is set in the environment"; empty when it applied.
	HeapBoundOff string `json:"heapBoundOff,omitempty"`
	// Mutations counts shared values of cached objects found changed in place
	// by the mutation guard (WithMutationGuard).
	Mutations int64 `json:"mutations"`
	// Shard is the informer's shard, ring and rebalances (WithShard); nil
	// without sharding.
	Shard *ShardStatus `json:"shard,omitempty"`
	// Encoded is the informer's encoded store (WithEncodedStore); nil when
	// it keeps decoded objects.
	Encoded *EncodedStatus `json:"encoded,omitempty"`
}

// Degraded reports whether the informer has failed at least n times in a row.
func (s Status) Degraded(n int) bool { return n > 0 && s.ConsecutiveFailures >= n }

// statusReporter records an informer's status and reports its failures: structured logs,
// metrics, and the watch-error handlers registered on the informer.
type statusReporter struct {
	informer, resource string
	logger             logr.Logger
	metrics            *metrics

	mu       sync.Mutex
	st       Status
	handlers []cache.WatchErrorHandlerWithContext
	// reflector is what handlers get with each failure: the informer's own
	// reflector once it has reported an error itself, until then a stand-in
	// with its name and type (see standInReflector).
	reflector *cache.Reflector
}

func newStatusReporter(informer, resource, wire string, logger logr.Logger, m *metrics) *statusReporter {
	return &statusReporter{
		informer: informer, resource: resource,
		logger:  logger.WithValues("informer", informer, "resource", resource),
		metrics: m,
		st:      Status{Informer: informer, Resource: resource, Wire: wire, FailuresByCause: map[failure.Reason]int64{}},
	}
}

func (t *statusReporter) status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.st
	s.FailuresByCause = make(map[failure.Reason]int64, len(t.st.FailuresByCause))
	for k, v := range t.st.FailuresByCause {
		s.FailuresByCause[k] = v
	}
	return s
}

func (t *statusReporter) addHandler(h cache.WatchErrorHandlerWithContext) {
	t.mu.Lock()
	t.handlers = append(t.handlers, h)
	t.mu.Unlock()
}

// Fail records and reports a failure of stage reason.
func (t *statusReporter) Fail(ctx context.Context, f failedAttempt) { t.failFrom(ctx, f, nil) }

// failFrom is fail for a failure the reflector r reported itself; nil means
// leanstore found it.
func (t *statusReporter) failFrom(ctx context.Context, f failedAttempt, r *cache.Reflector) {
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
	t.metrics.failure(f)
	for _, h := range handlers {
		h(ctx, r, fe)
	}
}

// OK records a success: the informer is healthy again.
func (t *statusReporter) OK() {
	t.mu.Lock()
	if t.st.ConsecutiveFailures > 0 {
		t.logger.Info("list/watch recovered", "after", t.st.ConsecutiveFailures, "failingFor", time.Since(t.st.FailingSince).Round(time.Millisecond).String())
	}
	t.st.ConsecutiveFailures = 0
	t.st.FailingSince = time.Time{}
	t.mu.Unlock()
}

func (t *statusReporter) Listed(path ListPath, reason string, count, reused int) {
	t.mu.Lock()
	t.st.ListPath = path
	t.st.ListPathReason = reason
	t.st.Lists++
	t.st.LastListTime = time.Now()
	t.st.LastListCount = count
	t.st.ReusedObjects = reused
	t.mu.Unlock()
	t.metrics.listed(t.informer, t.resource, path)
}

// WireChanged records the encoding the informer now reads.
func (t *statusReporter) WireChanged(wire string) {
	t.mu.Lock()
	t.st.Wire = wire
	t.mu.Unlock()
}

// WatchStarted counts a watch that started.
func (t *statusReporter) WatchStarted() {
	t.mu.Lock()
	t.st.WatchesStarted++
	t.mu.Unlock()
}

// isReported reports whether the status reporter has been told err already (see
// reflector.ReportedError).
func isReported(err error) bool { return reflector.IsReported(err) }

// The status reporter is told what the list/watch loop and each list's pacer do.
var (
	_ reflector.Reporter     = (*statusReporter)(nil)
	_ reflector.PaceReporter = (*statusReporter)(nil)
)

// HeapBound records whether the heap bound applies to the informer's lists.
func (t *statusReporter) HeapBound(off string) {
	t.mu.Lock()
	t.st.HeapBoundOff = off
	t.mu.Unlock()
}

// ForcedGC counts a collection the heap bound ran.
func (t *statusReporter) ForcedGC() {
	t.mu.Lock()
	t.st.ForcedGCs++
	t.mu.Unlock()
	if t.metrics != nil {
		t.metrics.forcedGCs.WithLabelValues(t.informer, t.resource).Inc()
	}
}
