package profile

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/trace"
	"time"
)

// SpikeConfig configures WatchSpikes. Dir and at least one trigger (HeapBytes,
// HeapGrowthRatio or SchedP99) are required; every other zero field takes the
// default its comment gives.
type SpikeConfig struct {
	// Dir receives the profiles and index.json; it is created if missing.
	// Point it at a volume that outlives the container (an emptyDir survives
	// an OOM kill's restart) to read the captures after the fact.
	Dir string

	// HeapBytes fires when /memory/classes/heap/objects:bytes (live objects
	// plus garbage not yet swept) reaches it; 0 turns it off. Set it where a
	// heap is worth explaining, e.g. 70% of the container's memory limit.
	HeapBytes uint64
	// HeapGrowthRatio fires when heap objects reach this multiple of their
	// moving baseline; 0 turns it off, otherwise it must be above 1. Between
	// two GCs the heap saw-tooths up to 1+GOGC/100 times the live heap (2x at
	// the default GOGC) and the baseline averages that, so ratios below about
	// 2 fire on ordinary GC cycles; 2.5 to 3 catches a re-list.
	HeapGrowthRatio float64
	// BaselineWindow is the time constant of the baseline, an exponentially
	// weighted moving average of heap objects. The ratio trigger is armed once
	// this much history is seen, so that a process starting from an empty
	// heap does not fire on its first sync (HeapBytes covers that). Default
	// 5 minutes.
	BaselineWindow time.Duration
	// SchedP99 fires when the 99th percentile of scheduler latency (time
	// goroutines wait, runnable, for a CPU) over one Interval reaches it; 0
	// turns it off. Idle it is tens of microseconds; a re-list on a busy
	// process pushes it to milliseconds. Windows with fewer than 20 samples
	// are ignored: their p99 is one unlucky wake-up.
	SchedP99 time.Duration

	// Interval is how often runtime/metrics are read. Default 1 second.
	Interval time.Duration
	// Cooldown is the least time between two captures: a spike lasts and
	// would otherwise fill Dir with copies of itself. Default 10 minutes.
	Cooldown time.Duration
	// MaxFiles caps the files kept in Dir (3 per capture, or 2 without the
	// trace); the oldest captures are deleted to make room. Default 30.
	MaxFiles int

	// DisableTrace turns the flight recorder off. The flight recorder keeps
	// the execution tracer running all the time, which costs CPU on every
	// scheduling event and memory that grows with activity up to about
	// TraceMaxBytes (idle, with 10,000 Pods cached: 3.9 ms of CPU per second
	// and 2.8 MiB; see docs/profiling.md); in exchange each capture holds the
	// seconds that led up to the spike. Only one flight recorder may run in a
	// process.
	DisableTrace bool
	// TraceMinAge is how far back the flight recorder tries to keep trace
	// data. Default 10 seconds.
	TraceMinAge time.Duration
	// TraceMaxBytes caps the flight recorder's buffer, taking precedence over
	// TraceMinAge. Default 32 MiB.
	TraceMaxBytes uint64

	// OnCapture, if set, is called after each capture is written, on the
	// watching goroutine: log it, count it, alert.
	OnCapture func(Capture)
}

// minSchedSamples is the least number of scheduler-latency samples in one
// Interval for its p99 to count.
const minSchedSamples = 20

func (c SpikeConfig) withDefaults() (SpikeConfig, error) {
	switch {
	case c.Dir == "":
		return c, errors.New("profile: spike watcher: Dir is required")
	case c.HeapBytes == 0 && c.HeapGrowthRatio == 0 && c.SchedP99 == 0:
		return c, errors.New("profile: spike watcher: set HeapBytes, HeapGrowthRatio or SchedP99")
	case c.HeapGrowthRatio != 0 && !(c.HeapGrowthRatio > 1):
		return c, fmt.Errorf("profile: spike watcher: HeapGrowthRatio %v must be above 1", c.HeapGrowthRatio)
	case c.Interval < 0 || c.Cooldown < 0 || c.BaselineWindow < 0 || c.SchedP99 < 0 || c.MaxFiles < 0 || c.TraceMinAge < 0:
		return c, errors.New("profile: spike watcher: durations and MaxFiles must not be negative")
	}
	if c.Interval == 0 {
		c.Interval = time.Second
	}
	if c.Cooldown == 0 {
		c.Cooldown = 10 * time.Minute
	}
	if c.BaselineWindow == 0 {
		c.BaselineWindow = 5 * time.Minute
	}
	if c.MaxFiles == 0 {
		c.MaxFiles = 30
	}
	if c.TraceMinAge == 0 {
		c.TraceMinAge = 10 * time.Second
	}
	if c.TraceMaxBytes == 0 {
		c.TraceMaxBytes = 32 << 20
	}
	if c.MaxFiles < c.filesPerCapture() {
		return c, fmt.Errorf("profile: spike watcher: MaxFiles %d holds no capture of %d files", c.MaxFiles, c.filesPerCapture())
	}
	return c, nil
}

func (c SpikeConfig) filesPerCapture() int {
	if c.DisableTrace {
		return 2
	}
	return 3
}

// WatchSpikes samples runtime/metrics every Interval until ctx ends, and when
// a trigger fires (outside the cooldown) writes into Dir a heap profile, a
// goroutine profile and, unless DisableTrace, a runtime/trace flight-recorder
// snapshot of the seconds before, and records the capture in Dir/index.json.
// Run it on a goroutine of its own:
//
//	go profile.WatchSpikes(ctx, profile.SpikeConfig{Dir: "/var/run/spikes", HeapBytes: 800 << 20})
//
// It returns nil when ctx ends, or an error at once for an invalid config,
// a Dir it cannot create or read, or a flight recorder it cannot start. A
// capture that fails to write is recorded with its error and does not stop
// the watch. The heap profile shows the heap as of the most recent GC, which
// during a spike is at most a few hundred milliseconds old.
func WatchSpikes(ctx context.Context, cfg SpikeConfig) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("profile: spike watcher: %w", err)
	}
	idx, err := loadIndex(cfg.Dir)
	if err != nil {
		return err
	}
	var fr *trace.FlightRecorder
	if !cfg.DisableTrace {
		fr = trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: cfg.TraceMinAge, MaxBytes: cfg.TraceMaxBytes})
		if err := fr.Start(); err != nil {
			return fmt.Errorf("profile: spike watcher: start flight recorder: %w", err)
		}
		defer fr.Stop()
	}

	det := newSpikeDetector(cfg)
	// A restart with the same Dir keeps the cooldown of the last capture.
	var last time.Time
	if n := len(idx.Captures); n > 0 {
		last = idx.Captures[n-1].Time
	}
	t := time.NewTicker(cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if ctx.Err() != nil { // both were ready; stopping wins
				return nil
			}
		}
		s := ReadRuntime()
		trig, ok := det.observe(s)
		if !ok || (!last.IsZero() && s.At.Sub(last) < cfg.Cooldown) {
			continue
		}
		last = s.At
		c := writeCapture(cfg.Dir, s.At, trig, fr)
		if err := idx.add(cfg.Dir, c, cfg.MaxFiles); err != nil {
			c.Errors = append(c.Errors, err.Error())
		}
		if cfg.OnCapture != nil {
			cfg.OnCapture(c)
		}
	}
}

// Trigger names of Capture.Trigger.
const (
	TriggerHeapBytes  = "heap_bytes"
	TriggerHeapGrowth = "heap_growth"
	TriggerSchedP99   = "sched_p99"
)

// trigger is why a capture is taken.
type trigger struct {
	name      string
	metric    string
	unit      string
	value     float64
	threshold float64
	baseline  float64
}

// spikeDetector decides, sample by sample, whether a trigger fires. It knows
// nothing of files or cooldowns, so that its logic can be tested on
// made-up snapshots.
type spikeDetector struct {
	cfg      SpikeConfig
	first    time.Time
	baseline float64 // moving average of heap objects bytes
	prev     RuntimeSnapshot
}

func newSpikeDetector(cfg SpikeConfig) *spikeDetector {
	return &spikeDetector{cfg: cfg}
}

// observe takes the next snapshot and reports the first trigger that fires,
// checking the absolute heap threshold, then the growth ratio, then the
// scheduler latency.
func (d *spikeDetector) observe(s RuntimeSnapshot) (trigger, bool) {
	heap := float64(s.HeapObjectsBytes)
	prev := d.prev
	d.prev = s
	if d.first.IsZero() {
		d.first, d.baseline = s.At, heap
		prev = RuntimeSnapshot{}
	}
	// The ratio compares with the baseline before this sample moves it.
	baseline := d.baseline
	if dt := s.At.Sub(prev.At); !prev.At.IsZero() && dt > 0 {
		alpha := 1 - math.Exp(-dt.Seconds()/d.cfg.BaselineWindow.Seconds())
		d.baseline += alpha * (heap - d.baseline)
	}

	if th := d.cfg.HeapBytes; th > 0 && s.HeapObjectsBytes >= th {
		return trigger{
			name: TriggerHeapBytes, metric: metricHeapObjects, unit: "bytes",
			value: heap, threshold: float64(th),
		}, true
	}
	if r := d.cfg.HeapGrowthRatio; r > 0 && s.At.Sub(d.first) >= d.cfg.BaselineWindow && heap >= r*baseline {
		return trigger{
			name: TriggerHeapGrowth, metric: metricHeapObjects, unit: "bytes",
			value: heap, threshold: r * baseline, baseline: baseline,
		}, true
	}
	if th := d.cfg.SchedP99; th > 0 && !prev.At.IsZero() {
		window := s.SchedLatency.Sub(prev.SchedLatency)
		if window.Count() >= minSchedSamples {
			if p99 := window.Quantile(0.99); p99 >= th.Seconds() {
				return trigger{
					name: TriggerSchedP99, metric: metricSchedLatency, unit: "seconds",
					value: p99, threshold: th.Seconds(),
				}, true
			}
		}
	}
	return trigger{}, false
}
