package bench

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// EventsPlan is the events phase of a measurement: after the re-lists, a
// writer in the parent process (dataset.EventWriter, a client of its own
// straight to the server) creates Objects Pods of its own, and then changes
// Pods at each of Rates in turn for Step each (status patches, label changes,
// creates and deletes), stamping every write with its sequence number and the
// time it was sent. The measured child reads the stamp in its handler: it
// measures how long each write took to reach the handler, which writes never
// did, and what the events cost it in CPU and heap. The writer's CPU is the
// parent's, never the child's.
type EventsPlan struct {
	// Rates are the steps' write rates, writes per second, in order. What
	// the report gives is the rate each step achieved.
	Rates []float64 `json:"rates"`
	// Step is how long each rate is held.
	Step Duration `json:"step"`
	// Objects is how many Pods the writer creates before the first step, and
	// writes to; the cache holds them beside the dataset.
	Objects int `json:"objects"`
	// Idle is the quiet window before the first step whose CPU (the
	// sampler's, the probe's, the watch's own) is taken off each step's, in
	// proportion to its length.
	Idle Duration `json:"idle"`
	// LateAfter is the delivery time above which a write counts as late.
	LateAfter Duration `json:"lateAfter"`
	// SampleEvery and ProbeEvery are the heap sampler's and the probe's
	// intervals during the phase (its idle window and its steps); the plan's
	// own come back after it. Coarser than the sync's, so that their own CPU,
	// which every step's CPU per event leaves out as the idle rate, is small
	// beside the events' and its spread does not swamp them. Zero keeps the
	// plan's.
	SampleEvery Duration `json:"sampleEvery,omitempty"`
	ProbeEvery  Duration `json:"probeEvery,omitempty"`
	// Drain bounds the wait, after the writer's last answer, for the events
	// still on their way: a write whose event has not arrived by then is lost.
	Drain Duration `json:"drain"`
}

// DefaultEvents is the events phase at the given rates: 30 s per rate, on
// 1,000 Pods of the writer's own.
func DefaultEvents(rates ...float64) *EventsPlan {
	return &EventsPlan{
		Rates:       rates,
		Step:        Duration(30 * time.Second),
		Objects:     1000,
		Idle:        Duration(5 * time.Second),
		LateAfter:   Duration(time.Second),
		SampleEvery: Duration(20 * time.Millisecond),
		ProbeEvery:  Duration(20 * time.Millisecond),
		Drain:       Duration(30 * time.Second),
	}
}

func (e EventsPlan) validate() error {
	switch {
	case len(e.Rates) == 0:
		return errors.New("the events phase needs at least one rate")
	case e.Step <= 0 || e.Idle <= 0 || e.LateAfter <= 0 || e.Drain <= 0:
		return errors.New("the events phase's step, idle window, late bound and drain must be positive")
	case e.SampleEvery < 0 || e.ProbeEvery < 0:
		return errors.New("the events phase's sampling and probe intervals must not be negative")
	case e.Objects < 1:
		return fmt.Errorf("the events phase needs at least 1 object to write to, got %d", e.Objects)
	}
	for _, r := range e.Rates {
		if !(r > 0) || math.IsInf(r, 0) {
			return fmt.Errorf("event rates must be positive, got %v", r)
		}
	}
	return nil
}

// maxSeq is the highest sequence number a writer following the plan uses:
// Objects for the Pods it sets up, then at most rate times Step writes in
// each step, plus the one planned at its start (and one for rounding).
func (e EventsPlan) maxSeq() int64 {
	n := int64(e.Objects)
	for _, r := range e.Rates {
		n += int64(r*e.Step.D().Seconds()) + 2
	}
	return n
}
