package reconcile

import (
	"context"
	"log/slog"
	"time"

	"github.com/cachetune/cachetune/pkg/failure"
)

// outcome is how a reconcile ended, in logs and in the outcome label.
type outcome string

const (
	outcomeSuccess  outcome = "success"  // no error, nothing more to do
	outcomeRequeue  outcome = "requeue"  // no error, Result.RequeueAfter
	outcomeRetry    outcome = "retry"    // transient error: retried after a delay
	outcomeParked   outcome = "parked"   // permanent error: waits for a change
	outcomeCanceled outcome = "canceled" // the loop stopped under it
)

// trace is one reconcile as logged and counted.
type trace struct {
	req        Request
	outcome    outcome
	duration   time.Duration // the Func's run time
	queued     time.Duration // from due to started: time spent waiting for a worker
	next       time.Duration // the delay until the next scheduled run, if any
	generation int64
	err        error
	class      failure.Class
}

// record logs the reconcile and counts it.
func (l *Loop) record(t trace) {
	m := l.metrics
	m.reconciles.WithLabelValues(string(t.outcome)).Inc()
	m.duration.WithLabelValues(string(t.outcome)).Observe(t.duration.Seconds())
	t.req.Trigger.each(func(name string) { m.triggers.WithLabelValues(name).Inc() })
	if t.err != nil && t.outcome != outcomeCanceled {
		m.errors.WithLabelValues(string(t.class.Reason), string(t.class.Cause), kind(t.class)).Inc()
	}

	level, msg := slog.Level(-l.o.traceVerbosity), "reconciled" // logr.ToSlogHandler maps V(n) to level -n
	switch t.outcome {
	case outcomeRetry:
		level, msg = slog.LevelWarn, "reconcile failed, will retry"
	case outcomeParked:
		level, msg = slog.LevelError, "reconcile failed permanently, waiting for a change"
	case outcomeCanceled:
		msg = "reconcile canceled"
	}
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("object", t.req.Key.String()),
		slog.String("trigger", t.req.Trigger.String()),
		slog.Int("attempt", t.req.Attempt),
		slog.String("outcome", string(t.outcome)),
		slog.Duration("duration", t.duration),
		slog.Duration("queued", t.queued),
	}
	if t.generation != 0 {
		attrs = append(attrs, slog.Int64("generation", t.generation))
	}
	if t.next > 0 {
		attrs = append(attrs, slog.Duration("next", t.next))
	}
	if t.err != nil {
		attrs = append(attrs, slog.String("error", t.err.Error()))
		if t.outcome != outcomeCanceled {
			attrs = append(attrs, slog.String("class", t.class.String()))
		}
	}
	l.log.LogAttrs(context.Background(), level, msg, attrs...)
}

// kind is the retry kind of a class, for the errors metric.
func kind(c failure.Class) string {
	switch {
	case c.Permanent:
		return "permanent"
	case c.Transient:
		return "transient"
	}
	return "neither"
}
