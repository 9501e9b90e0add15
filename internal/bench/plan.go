package bench

import (
	"encoding/json"
	"fmt"
	"time"
)

// Plan is how a mode is measured: the same for every mode of a run.
type Plan struct {
	// Relists is the number of forced re-lists.
	Relists int `json:"relists"`
	// Churn is, for each re-list in order, the fraction of the objects (0 to 1)
	// changed between the 410 and the re-list, with a tenth as many created
	// and deleted (dataset.PlanChanges). Empty means no changes; otherwise it
	// has one entry per re-list.
	Churn []float64 `json:"churn,omitempty"`
	// ChurnSeed picks the objects changed: the same seed gives every mode the
	// same changes.
	ChurnSeed uint64 `json:"churnSeed,omitempty"`
	// Settle is how long to wait after the sync and after each re-list has
	// delivered every object, before taking the live heap: the tail of a spike
	// (garbage not yet collected) belongs to the window.
	Settle Duration `json:"settle"`
	// Idle is the quiet window after the sync that re-list latencies are
	// compared with.
	Idle Duration `json:"idle"`
	// SampleEvery is the heap and RSS sampling interval: 2 ms by default, so
	// that a peak lasting a few milliseconds between two collections is seen
	// (a sample costs a few microseconds, and its record is kept off the
	// heap; see Sampler).
	SampleEvery Duration `json:"sampleEvery"`
	// ProbeEvery is the probe goroutine's sleep.
	ProbeEvery Duration `json:"probeEvery"`
	// SyncTimeout bounds the initial sync, RelistTimeout each re-list.
	SyncTimeout   Duration `json:"syncTimeout"`
	RelistTimeout Duration `json:"relistTimeout"`
	// SeriesPoints is the number of points kept for a mode's chart.
	SeriesPoints int `json:"seriesPoints"`
	// Events, when set, adds the events phase after the re-lists: the
	// steady state, with a writer changing objects at fixed rates.
	Events *EventsPlan `json:"events,omitempty"`
	// Rounds is how many times every mode runs, each time in a process of
	// its own, the modes taking turns and their order reversed every other
	// round, so that what a shared machine does meanwhile falls on every
	// mode alike; 0 or 1: once. The report gives each mode's median.
	Rounds int `json:"rounds,omitempty"`
}

// DefaultPlan is cachebench's standard measurement: two re-lists, the first
// of an unchanged store, the second after a tenth of the objects changed (and
// a hundredth created and deleted), with short windows, so that the whole
// default mode set runs in a few minutes.
func DefaultPlan() Plan {
	return Plan{
		Relists:       2,
		Churn:         []float64{0, 0.1},
		ChurnSeed:     1,
		Settle:        Duration(500 * time.Millisecond),
		Idle:          Duration(1500 * time.Millisecond),
		SampleEvery:   Duration(2 * time.Millisecond),
		ProbeEvery:    Duration(time.Millisecond),
		SyncTimeout:   Duration(10 * time.Minute),
		RelistTimeout: Duration(5 * time.Minute),
		SeriesPoints:  300,
	}
}

// Validate reports a plan that cannot be run.
func (p Plan) Validate() error {
	switch {
	case p.Relists < 0:
		return fmt.Errorf("re-lists must not be negative, got %d", p.Relists)
	case p.Rounds < 0:
		return fmt.Errorf("rounds must not be negative, got %d", p.Rounds)
	case p.SampleEvery <= 0 || p.ProbeEvery <= 0:
		return fmt.Errorf("sample and probe intervals must be positive")
	case p.Settle < 0 || p.Idle < 0:
		return fmt.Errorf("settle and idle windows must not be negative")
	case p.SyncTimeout <= 0 || p.RelistTimeout <= 0:
		return fmt.Errorf("time-outs must be positive")
	case p.SeriesPoints < 3:
		return fmt.Errorf("a series needs at least 3 points, got %d", p.SeriesPoints)
	case len(p.Churn) > 0 && len(p.Churn) != p.Relists:
		return fmt.Errorf("%d churn levels for %d re-lists: give one per re-list", len(p.Churn), p.Relists)
	}
	for _, c := range p.Churn {
		if !(c >= 0 && c <= 1) {
			return fmt.Errorf("churn must be between 0 and 1, got %v", c)
		}
	}
	if p.Events != nil {
		return p.Events.validate()
	}
	return nil
}

// ChurnAt is the churn before re-list k (from 1).
func (p Plan) ChurnAt(k int) float64 {
	if k < 1 || k > len(p.Churn) {
		return 0
	}
	return p.Churn[k-1]
}

// Duration is a time.Duration written as "1.5s" in JSON, so that a report
// reads without unit arithmetic.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"1.5s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
