package leanstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/cache"
)

// ListPath is how an informer's last list was served.
type ListPath string

const (
	// ListPathNone: no list has completed yet.
	ListPathNone ListPath = ""
	// ListPathStreaming: a streaming list (watch with sendInitialEvents).
	ListPathStreaming ListPath = "streaming"
	// ListPathPaged: a paged LIST.
	ListPathPaged ListPath = "list"
	// ListPathClientGo: the informer is client-go's own (the clientset has no REST
	// client, e.g. a fake clientset in unit tests); only stripping applies.
	ListPathClientGo ListPath = "client-go"
)

// Phase is the step of the list-and-watch cycle where a failure happened.
type Phase string

const (
	PhaseInitialList   Phase = "initial-list"   // a list before the first sync
	PhaseRelist        Phase = "relist"         // a list after the first sync
	PhaseWatchStart    Phase = "watch-start"    // opening a watch
	PhaseWatch         Phase = "watch"          // a watch that failed mid-stream
	PhaseWatchStalled  Phase = "watch-stalled"  // a watch silent for longer than the idle timeout
	PhaseStreamingList Phase = "streaming-list" // a streaming list that failed part-way
)

// Failure is one failed list or watch attempt of an informer.
type Failure struct {
	Informer string
	Resource string
	Phase    Phase
	// Class is the error's class (see pkg/failure), e.g. "status-410", "network".
	Class string
	// Transient reports whether retrying may succeed without a change elsewhere.
	Transient bool
	Err       error
	// Attempt counts consecutive failures, from 1.
	Attempt int
	// NextDelay is how long the informer waits before trying again (0 when the
	// retry is immediate, as after a 410 that only requires a fresh list).
	NextDelay time.Duration
	Time      time.Time
}

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
	ReusedObjects       int              `json:"reusedObjects"`
	LastError           string           `json:"lastError,omitempty"`
	LastErrorClass      string           `json:"lastErrorClass,omitempty"`
	LastErrorTime       time.Time        `json:"lastErrorTime,omitzero"`
	FailingSince        time.Time        `json:"failingSince,omitzero"`
	ConsecutiveFailures int              `json:"consecutiveFailures"`
	FailuresByClass     map[string]int64 `json:"failuresByClass,omitempty"`
	WatchesStarted      int64            `json:"watchesStarted"`
	StalledWatches      int64            `json:"stalledWatches"`
}

// Degraded reports whether the informer has failed at least n times in a row.
func (s Status) Degraded(n int) bool { return n > 0 && s.ConsecutiveFailures >= n }

// tracker records an informer's status and reports its failures: structured logs,
// metrics, and the watch-error handlers registered on the informer.
type tracker struct {
	informer, resource string
	logger             logr.Logger
	metrics            *metrics

	mu       sync.Mutex
	st       Status
	handlers []cache.WatchErrorHandlerWithContext
}

func newTracker(informer, resource, wire string, logger logr.Logger, m *metrics) *tracker {
	return &tracker{
		informer: informer, resource: resource,
		logger:  logger.WithValues("informer", informer, "resource", resource),
		metrics: m,
		st:      Status{Informer: informer, Resource: resource, Wire: wire, FailuresByClass: map[string]int64{}},
	}
}

func (t *tracker) status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.st
	s.FailuresByClass = make(map[string]int64, len(t.st.FailuresByClass))
	for k, v := range t.st.FailuresByClass {
		s.FailuresByClass[k] = v
	}
	return s
}

func (t *tracker) addHandler(h cache.WatchErrorHandlerWithContext) {
	t.mu.Lock()
	t.handlers = append(t.handlers, h)
	t.mu.Unlock()
}

// fail records and reports a failure. It returns the failure's attempt number.
func (t *tracker) fail(ctx context.Context, phase Phase, err error, next time.Duration) {
	class, transient := classify(err)
	now := time.Now()
	t.mu.Lock()
	if t.st.ConsecutiveFailures == 0 {
		t.st.FailingSince = now
	}
	t.st.ConsecutiveFailures++
	t.st.LastError = err.Error()
	t.st.LastErrorClass = class
	t.st.LastErrorTime = now
	t.st.FailuresByClass[class]++
	if phase == PhaseWatchStalled {
		t.st.StalledWatches++
	}
	attempt := t.st.ConsecutiveFailures
	handlers := append([]cache.WatchErrorHandlerWithContext(nil), t.handlers...)
	t.mu.Unlock()

	f := Failure{Informer: t.informer, Resource: t.resource, Phase: phase, Class: class, Transient: transient,
		Err: err, Attempt: attempt, NextDelay: next, Time: now}
	t.logger.Error(err, "list/watch failed", "phase", phase, "class", class, "transient", transient,
		"attempt", attempt, "nextDelay", next.Round(time.Millisecond).String())
	t.metrics.failure(f)
	for _, h := range handlers {
		h(ctx, nil, &FailureError{Failure: f})
	}
}

// ok records a success: the informer is healthy again.
func (t *tracker) ok() {
	t.mu.Lock()
	if t.st.ConsecutiveFailures > 0 {
		t.logger.Info("list/watch recovered", "after", t.st.ConsecutiveFailures, "failingFor", time.Since(t.st.FailingSince).Round(time.Millisecond).String())
	}
	t.st.ConsecutiveFailures = 0
	t.st.FailingSince = time.Time{}
	t.mu.Unlock()
}

func (t *tracker) listed(path ListPath, reason string, count, reused int) {
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

func (t *tracker) watchStarted() {
	t.mu.Lock()
	t.st.WatchesStarted++
	t.mu.Unlock()
}

// FailureError is the error given to watch-error handlers registered on a
// leanstore informer: it carries the whole Failure.
type FailureError struct{ Failure Failure }

func (e *FailureError) Error() string {
	return string(e.Failure.Phase) + " of " + e.Failure.Resource + " failed (" + e.Failure.Class + "): " + e.Failure.Err.Error()
}

func (e *FailureError) Unwrap() error { return e.Failure.Err }

// reportedError marks an error that the tracker has already reported, so that the
// reflector's own error handler does not report it again.
type reportedError struct{ error }

func (e reportedError) Unwrap() error { return e.error }

func isReported(err error) bool {
	var r reportedError
	return errors.As(err, &r)
}
