package failure

import (
	"strings"
	"time"
)

// Error is a failure that cachetune reports with its context: the layer and
// reason, and the resource, object and call it concerns. Callers act on it
// with Classify, Transient and Permanent, or errors.As.
type Error struct {
	// Layer is where the failure arose; when empty, Reason.Layer().
	Layer Layer
	// Reason says what went wrong.
	Reason Reason
	// Resource names the resource concerned, e.g. "pods" or
	// "widgets.example.com".
	Resource string
	// Object is the namespace/name of the object concerned, if one is.
	Object string
	// Call names the operation that failed, e.g. "get configmap", for
	// per-call time-outs.
	Call string
	// Attempt counts consecutive failures of the same kind (1 for the
	// first); 0 when not counted.
	Attempt int
	// RetryAfter is the delay the server asked for (for example in a
	// Retry-After header), when it asked; see RetryAfter.
	RetryAfter time.Duration
	// Err is the underlying error.
	Err error
}

// Watcher reports a failure of an informer's list-and-watch path on
// resource. Its transience follows err (a 403 is permanent, a 410 transient),
// and defaults to transient; WatchStalled is always transient.
//
//	failure.Watcher(failure.WatchStalled, "pods", fmt.Errorf("no event for %s", idle))
func Watcher(reason Reason, resource string, err error) *Error {
	return &Error{Layer: LayerWatcher, Reason: reason, Resource: resource, Err: err}
}

// Reconcile reports a failure of the reconciler for object (namespace/name).
// With reason ReconcileFailed its transience follows err, and defaults to
// transient; with InvalidSpec it is permanent: record it on the object's
// status and wait for the object to change.
func Reconcile(reason Reason, object string, err error) *Error {
	return &Error{Layer: LayerReconcile, Reason: reason, Object: object, Err: err}
}

// Error renders "resource object: call: reason: err", leaving out what is
// unknown, e.g. "pods: watch stalled: no event for 2m0s".
func (e *Error) Error() string {
	var b strings.Builder
	if e.Resource != "" {
		b.WriteString(e.Resource)
	}
	if e.Object != "" {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(e.Object)
	}
	if e.Call != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(e.Call)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Reason.phrase())
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// phrase turns a reason into lowercase words: "WatchStalled" → "watch stalled".
func (r Reason) phrase() string {
	switch r {
	case "":
		return "failed"
	case TLS:
		return "TLS"
	}
	var b strings.Builder
	for i, c := range string(r) {
		if c >= 'A' && c <= 'Z' {
			if i > 0 {
				b.WriteByte(' ')
			}
			c += 'a' - 'A'
		}
		b.WriteRune(c)
	}
	return b.String()
}
