package reflector

import (
	"context"
	"errors"
	"time"

	"github.com/cachetune/cachetune/pkg/failure"
)

// Reporter is told every failure and every success of an informer's lists and
// watches: leanstore's status reporter, which logs them, counts them in metrics and
// Status, and calls the informer's watch-error handlers. It is told what each
// list's pacer does too (PaceReporter).
type Reporter interface {
	PaceReporter
	// Fail records and reports a failure of stage f.Reason.
	Fail(ctx context.Context, f FailedAttempt)
	// OK records a success: the informer is healthy again.
	OK()
	// Listed records a completed list: how it was served and why, how many
	// objects it had and how many of them were unchanged and kept.
	Listed(path ListPath, reason string, count, reused int)
	// WatchStarted counts a watch that started, or resumed on a new stream.
	WatchStarted()
	// WireChanged records the encoding the informer reads from now on.
	WireChanged(wire string)
}

// ReportedError marks an error that the Reporter has been told already, so
// that the reflector's own error handler does not report it again (see
// IsReported).
type ReportedError struct{ error }

func (e ReportedError) Unwrap() error { return e.error }

// IsReported reports whether err, or an error it wraps, is a ReportedError.
func IsReported(err error) bool {
	var r ReportedError
	return errors.As(err, &r)
}

// ListPath is how an informer's last list was served.
type ListPath string

// FailedAttempt is one failed list or watch attempt of an informer: what the
// statusReporter records, logs and counts. Handlers get its Err, a *failure.Error.
type FailedAttempt struct {
	Informer string
	Resource string
	// Reason is the stage that failed: failure.InitialListFailed (any list,
	// see Relist and Streaming), WatchStartFailed, WatchFailed, WatchError (an
	// ERROR event such as 410 Gone) or WatchStalled.
	Reason failure.Reason
	// Class is the error's full classification, e.g. Cause Forbidden, Code 403,
	// Permanent.
	Class failure.Class
	// Relist is true for a list after the first sync.
	Relist bool
	// Streaming is true when the failed list was a streaming list.
	Streaming bool
	// Probe is true when the failed request was a probe: a cheap request (a
	// list of one object, or a watch from the last resourceVersion) sent
	// every second while the informer backs off, to retry as soon as the
	// fault is gone. Its NextDelay is what is left of the backoff.
	Probe bool
	// Err is a *failure.Error wrapping what went wrong.
	Err error
	// Attempt counts consecutive failures, from 1.
	Attempt int
	// NextDelay is how long the informer waits before trying again (0 when the
	// retry is immediate, as after a 410 that only requires a fresh list).
	NextDelay time.Duration
	Time      time.Time
}

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
