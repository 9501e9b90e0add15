package reconcile

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

// Option configures a Loop.
type Option func(*options)

type options struct {
	workers         int
	backoff         Backoff
	conflictDelay   time.Duration
	conflictRetries int
	debounce        time.Duration
	timeout         time.Duration
	parkedRecheck   time.Duration
	logger          *slog.Logger
	traceVerbosity  int
	registerer      prometheus.Registerer
	onPermanent     Hook
	onError         Hook
	hookTimeout     time.Duration
	hookConcurrency int
}

// defaults are every default of a Loop, in one place.
func defaults() options {
	return options{
		// A small fixed pool, bounded whatever the event rate: one
		// goroutine per event is how controllers end up throttled with 429s.
		workers: 2,
		backoff: DefaultBackoff(),
		// Long enough for the informer to deliver the version that won the
		// race on a real cluster, short enough to feel immediate.
		conflictDelay:   100 * time.Millisecond,
		conflictRetries: 3,
		// The library's one default logger: klog's, where client-go's own
		// components log (see WithLogger).
		logger:          slog.New(logr.ToSlogHandler(klog.Background())),
		hookTimeout:     10 * time.Second,
		hookConcurrency: 2,
	}
}

func (o options) validate() error {
	if err := o.backoff.Validate(); err != nil {
		return err
	}
	switch {
	case o.workers < 1:
		return fmt.Errorf("workers must be at least 1, got %d", o.workers)
	case o.conflictDelay < 0 || o.conflictRetries < 0:
		return fmt.Errorf("invalid conflict retry: delay %s, retries %d", o.conflictDelay, o.conflictRetries)
	case o.debounce < 0 || o.timeout < 0 || o.parkedRecheck < 0:
		return fmt.Errorf("negative duration: debounce %s, timeout %s, parked recheck %s", o.debounce, o.timeout, o.parkedRecheck)
	case o.hookTimeout <= 0:
		return fmt.Errorf("hook timeout must be positive, got %s", o.hookTimeout)
	case o.hookConcurrency < 1:
		return fmt.Errorf("hook concurrency must be at least 1, got %d", o.hookConcurrency)
	case o.traceVerbosity < 0:
		return fmt.Errorf("trace verbosity must not be negative, got %d", o.traceVerbosity)
	}
	return nil
}

// WithWorkers sets how many reconciles run at once, across all keys (one key
// never runs twice at once). The default is 2.
func WithWorkers(n int) Option {
	return func(o *options) { o.workers = n }
}

// WithBackoff sets the per-key backoff after transient failures; the default
// is DefaultBackoff. Its Cap bounds what a forever-failing object costs: see
// Backoff.MaxAttempts.
func WithBackoff(b Backoff) Option {
	return func(o *options) { o.backoff = b }
}

// WithConflictRetry sets how a resourceVersion conflict (409 from an update
// with a stale object) is retried: after delay (plus the backoff's jitter)
// while the key has failed at most retries times in a row, then with the
// backoff like any transient error. The default is 100 ms for 3 failures.
func WithConflictRetry(delay time.Duration, retries int) Option {
	return func(o *options) {
		o.conflictDelay = delay
		o.conflictRetries = retries
	}
}

// WithDebounce delays the reconcile that an informer event triggers by
// window, so that a burst of events for one key (a rollout rewriting an
// object several times) becomes one reconcile. The window starts at the
// burst's first event and does not slide, so a key that changes constantly
// still runs once per window. The default, 0, runs at once.
func WithDebounce(window time.Duration) Option {
	return func(o *options) { o.debounce = window }
}

// WithTimeout bounds each reconcile: its context ends after d, and a
// reconcile that fails because of it is a transient time-out. The default, 0,
// sets no bound; per-call time-outs (retry.CallWithTimeout) are the finer
// tool.
func WithTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

// WithParkedRecheck retries a parked key (one whose reconcile failed with a
// permanent error) after d even if its object does not change: for
// permanent errors that are fixed outside the object, such as a missing RBAC
// grant (403). The default, 0, waits for a change.
func WithParkedRecheck(d time.Duration) Option {
	return func(o *options) { o.parkedRecheck = d }
}

// WithLogger sets the logger for reconcile traces and loop messages, a
// logr.Logger as in client-go and controller-runtime (klog, zapr, or slog
// through logr.FromSlogHandler). Messages at slog's levels map to logr's
// verbosity: Info is V(0), Debug is V(4). The default is klog.Background(),
// as in pkg/leanstore and pkg/profile: client-go's own components log there,
// so one klog.SetLogger routes all of them to a program's logger.
// logr.Discard() logs nothing.
func WithLogger(l logr.Logger) Option {
	return func(o *options) { o.logger = slog.New(logr.ToSlogHandler(l)) }
}

// WithTraceVerbosity sets the logr verbosity of the trace line of a
// successful reconcile; failed ones log as warnings (retried) and errors
// (parked). The default, 0, shows every reconcile; 4 (slog's Debug)
// quietens a busy controller. It must not be negative.
func WithTraceVerbosity(v int) Option {
	return func(o *options) { o.traceVerbosity = v }
}

// WithMetrics registers the loop's Prometheus metrics with r, labelled with
// the loop's name; see the package documentation for the list. Without it,
// nothing is registered.
func WithMetrics(r prometheus.Registerer) Option {
	return func(o *options) { o.registerer = r }
}

// WithOnPermanent runs hook, asynchronously, when a reconcile fails with a
// permanent error and its key is parked: the place to record the reason as
// a status condition (ConditionHook does that for custom resources).
func WithOnPermanent(hook Hook) Option {
	return func(o *options) { o.onPermanent = hook }
}

// WithOnError runs hook, asynchronously, after every failed reconcile,
// transient or permanent, with the decision taken.
func WithOnError(hook Hook) Option {
	return func(o *options) { o.onError = hook }
}

// WithHookTimeout bounds each hook call; the default is 10 s.
func WithHookTimeout(d time.Duration) Option {
	return func(o *options) { o.hookTimeout = d }
}

// WithHookConcurrency sets how many hook calls may run at once; the default
// is 2. When all are busy, the worker that needs one waits for a free slot
// (at most about one hook time-out), so hooks never pile up unbounded.
func WithHookConcurrency(n int) Option {
	return func(o *options) { o.hookConcurrency = n }
}
