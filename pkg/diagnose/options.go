package diagnose

import (
	"time"

	"k8s.io/utils/clock"
)

// Option configures a ChurnDetector or a StuckDetector. Each option says which
// detector it applies to; the other ignores it.
type Option func(*options)

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

func build(opts []Option) options {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	if o.loopUpdates < 2 {
		o.loopUpdates = 2
	}
	if o.pingPongTurns < 2 {
		o.pingPongTurns = 2
	}
	// History must hold a whole loop or ping-pong run; half as much again
	// leaves room for the spec changes and answers a loop count skips.
	min := max(o.loopUpdates, o.pingPongTurns)
	if !o.historyWasSet {
		o.history = min + min/2
	}
	if o.history < min {
		o.history = min
	}
	if !o.forgetAfterSet {
		o.forgetAfter = o.window
	}
	if o.maxObjects < 1 {
		o.maxObjects = 1
	}
	if o.maxFindings < 1 {
		o.maxFindings = 1
	}
	return o
}

// WithResource names the resource the detector watches (for example
// "widgets.bench.cachetune.dev"); it labels findings and metrics. Both detectors.
func WithResource(name string) Option { return func(o *options) { o.resource = name } }

// WithClock replaces the wall clock, for tests. Both detectors.
func WithClock(c clock.PassiveClock) Option { return func(o *options) { o.clock = c } }

// WithWindow sets the sliding window in which updates are counted (default 2
// minutes). Churn detector.
func WithWindow(d time.Duration) Option { return func(o *options) { o.window = d } }

// WithLoopThreshold flags a reconcile loop when an object gets at least n
// updates within the window that are neither a spec change nor the first write
// after one, spread over at least half the window, most of them with content
// not seen before in the window (default 20). Churn detector.
func WithLoopThreshold(n int) Option { return func(o *options) { o.loopUpdates = n } }

// WithPingPongTurns flags ping-pong when, within the window, ownership of
// fields moved back and forth between the same two managers at least n times
// in a row (default 4: A, B, A, B). Churn detector.
func WithPingPongTurns(n int) Option { return func(o *options) { o.pingPongTurns = n } }

// WithMaxObjects caps the objects tracked at once (default 5000); the least
// recently updated object is dropped first. Churn detector.
func WithMaxObjects(n int) Option { return func(o *options) { o.maxObjects = n } }

// WithHistory sets how many recent updates are kept per object (default 1.5
// times the larger of the loop threshold and ping-pong turns, so 30; never less
// than that larger value). Each costs 24 bytes. Churn detector.
func WithHistory(n int) Option {
	return func(o *options) { o.history, o.historyWasSet = n, true }
}

// WithForgetAfter drops an object's history once it has had no update for d
// (default: the window). Churn detector.
func WithForgetAfter(d time.Duration) Option {
	return func(o *options) { o.forgetAfter, o.forgetAfterSet = d, true }
}

// WithMaxFindings caps the findings kept (default 100; the least recently seen
// goes first), and the per-object series the detectors export. Both detectors.
func WithMaxFindings(n int) Option { return func(o *options) { o.maxFindings = n } }

// WithRetention keeps a finding for d after it was last confirmed (default 15
// minutes), so that a loop that stopped still shows for a while. Churn detector.
func WithRetention(d time.Duration) Option { return func(o *options) { o.retention = d } }

// WithThreshold reports an object as stuck Terminating once its
// deletionTimestamp is older than d (default 10 minutes). Stuck detector.
func WithThreshold(d time.Duration) Option { return func(o *options) { o.threshold = d } }
