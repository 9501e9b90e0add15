package diagnose

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// ChurnOption configures NewChurnDetector.
type ChurnOption interface{ applyChurn(*options) }

// StuckOption configures NewStuckDetector.
type StuckOption interface{ applyStuck(*options) }

// Option configures either detector: WithResource, WithClock,
// WithMaxFindings and WithMetrics. An option that applies to one detector
// only is a ChurnOption or a StuckOption, so that giving it to the other does
// not compile.
type Option interface {
	ChurnOption
	StuckOption
}

type churnOption func(*options)

func (f churnOption) applyChurn(o *options) { f(o) }

type stuckOption func(*options)

func (f stuckOption) applyStuck(o *options) { f(o) }

type bothOption func(*options)

func (f bothOption) applyChurn(o *options) { f(o) }
func (f bothOption) applyStuck(o *options) { f(o) }

type options struct {
	resource string
	clock    clock.PassiveClock

	// churn
	window         time.Duration
	loopUpdates    int
	pingPongTurns  int
	maxObjects     int
	history        int
	forgetAfter    time.Duration
	maxFindings    int
	retention      time.Duration
	historyWasSet  bool
	forgetAfterSet bool

	// stuck
	threshold time.Duration

	registerer prometheus.Registerer
}

// defaults are every default of the package, in one place.
func defaults() options {
	return options{
		clock:         clock.RealClock{},
		window:        2 * time.Minute,
		loopUpdates:   20,
		pingPongTurns: 4,
		maxObjects:    5000,
		maxFindings:   100,
		retention:     15 * time.Minute,
		threshold:     10 * time.Minute,
	}
}

func buildChurn(opts []ChurnOption) (options, error) {
	o := defaults()
	for _, opt := range opts {
		opt.applyChurn(&o)
	}
	// History must hold a whole loop or ping-pong run; half as much again
	// leaves room for the spec changes and answers a loop count skips.
	least := max(o.loopUpdates, o.pingPongTurns)
	if !o.historyWasSet {
		o.history = least + least/2
	}
	if !o.forgetAfterSet {
		o.forgetAfter = o.window
	}
	var err error
	switch {
	case o.window <= 0:
		err = fmt.Errorf("WithWindow: must be positive, got %s", o.window)
	case o.loopUpdates < 2:
		err = fmt.Errorf("WithLoopThreshold: must be at least 2, got %d", o.loopUpdates)
	case o.pingPongTurns < 2:
		err = fmt.Errorf("WithPingPongTurns: must be at least 2, got %d", o.pingPongTurns)
	case o.history < least:
		err = fmt.Errorf("WithHistory: must hold a whole loop or ping-pong run, at least %d, got %d", least, o.history)
	case o.forgetAfter <= 0:
		err = fmt.Errorf("WithForgetAfter: must be positive, got %s", o.forgetAfter)
	case o.maxObjects < 1:
		err = fmt.Errorf("WithMaxObjects: must be at least 1, got %d", o.maxObjects)
	case o.retention < 0:
		err = fmt.Errorf("WithRetention: must not be negative, got %s", o.retention)
	default:
		err = o.validateShared()
	}
	if err != nil {
		return o, fmt.Errorf("diagnose: churn detector: %w", err)
	}
	return o, nil
}

func buildStuck(opts []StuckOption) (options, error) {
	o := defaults()
	for _, opt := range opts {
		opt.applyStuck(&o)
	}
	err := o.validateShared()
	if err == nil && o.threshold < 0 {
		err = fmt.Errorf("WithThreshold: must not be negative, got %s", o.threshold)
	}
	if err != nil {
		return o, fmt.Errorf("diagnose: stuck detector: %w", err)
	}
	return o, nil
}

func (o *options) validateShared() error {
	switch {
	case o.clock == nil:
		return errors.New("WithClock: clock is nil")
	case o.maxFindings < 1:
		return fmt.Errorf("WithMaxFindings: must be at least 1, got %d", o.maxFindings)
	}
	return nil
}

// register registers c with the registerer of WithMetrics, if any.
func (o *options) register(c prometheus.Collector) error {
	if o.registerer == nil {
		return nil
	}
	if err := o.registerer.Register(c); err != nil {
		return fmt.Errorf("diagnose: WithMetrics for resource %q: %w", o.resource, err)
	}
	return nil
}

// WithResource names the resource the detector watches (for example
// "widgets.bench.cachetune.dev"); it labels findings and metrics. Both detectors.
func WithResource(name string) Option { return bothOption(func(o *options) { o.resource = name }) }

// WithClock replaces the wall clock, for tests. Both detectors.
func WithClock(c clock.PassiveClock) Option { return bothOption(func(o *options) { o.clock = c }) }

// WithWindow sets the sliding window in which updates are counted (default 2
// minutes). Churn detector.
func WithWindow(d time.Duration) ChurnOption { return churnOption(func(o *options) { o.window = d }) }

// WithLoopThreshold flags a reconcile loop when an object gets at least n
// updates within the window that are neither a spec change nor the first write
// after one, spread over at least half the window, most of them with content
// not seen before in the window (default 20). Churn detector.
func WithLoopThreshold(n int) ChurnOption { return churnOption(func(o *options) { o.loopUpdates = n }) }

// WithPingPongTurns flags ping-pong when, within the window, ownership of
// fields moved back and forth between the same two managers at least n times
// in a row (default 4: A, B, A, B). Churn detector.
func WithPingPongTurns(n int) ChurnOption {
	return churnOption(func(o *options) { o.pingPongTurns = n })
}

// WithMaxObjects caps the objects tracked at once (default 5000); the least
// recently updated object is dropped first. Churn detector.
func WithMaxObjects(n int) ChurnOption { return churnOption(func(o *options) { o.maxObjects = n }) }

// WithHistory sets how many recent updates are kept per object (default 1.5
// times the larger of the loop threshold and ping-pong turns, so 30). Less than
// that larger value is an error: the history must hold a whole run. Each
// costs 24 bytes. Churn detector.
func WithHistory(n int) ChurnOption {
	return churnOption(func(o *options) { o.history, o.historyWasSet = n, true })
}

// WithForgetAfter drops an object's history once it has had no update for d
// (default: the window). Churn detector.
func WithForgetAfter(d time.Duration) ChurnOption {
	return churnOption(func(o *options) { o.forgetAfter, o.forgetAfterSet = d, true })
}

// WithMaxFindings caps the findings kept (default 100; the least recently seen
// goes first), and the per-object series the detectors export. Both detectors.
func WithMaxFindings(n int) Option { return bothOption(func(o *options) { o.maxFindings = n }) }

// WithRetention keeps a finding for d after it was last confirmed (default 15
// minutes), so that a loop that stopped still shows for a while. Churn detector.
func WithRetention(d time.Duration) ChurnOption {
	return churnOption(func(o *options) { o.retention = d })
}

// WithThreshold reports an object as stuck Terminating once its
// deletionTimestamp is older than d (default 10 minutes). Stuck detector.
func WithThreshold(d time.Duration) StuckOption {
	return stuckOption(func(o *options) { o.threshold = d })
}

// WithMetrics registers the detector's Prometheus collector with r when it
// is built (an error from the constructor when that fails); see the
// package documentation for the series. Without it, nothing is registered.
// Both detectors.
func WithMetrics(r prometheus.Registerer) Option {
	return bothOption(func(o *options) { o.registerer = r })
}
