package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/cachetune/cachetune/pkg/profile"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// EventsPhase is the steady state measured after the re-lists (Plan.Events):
// what the cache paid for the events of a writer changing its objects at
// fixed rates.
type EventsPhase struct {
	// Objects is the number of Pods the writer created for itself before the
	// first step; the cache holds them beside the dataset.
	Objects int `json:"objects"`
	// Idle is the quiet window before the first step, and IdleCPUPerSecond
	// the measured process's CPU seconds per second in it (its sampler's,
	// probe's and watch's own), which each step's CPU per event leaves out.
	Idle             Window  `json:"idle"`
	IdleCPUPerSecond float64 `json:"idleCPUPerSecond"`
	// LiveHeapBefore and LiveHeapAfter are the live heap (after a GC) before
	// the first step and after the last.
	LiveHeapBefore uint64 `json:"liveHeapBeforeBytes"`
	LiveHeapAfter  uint64 `json:"liveHeapAfterBytes"`
	// Steps are the rates, in order.
	Steps []EventStep `json:"steps"`
	// Error is set when the phase could not run (its steps are then
	// missing); a step's own failure is the step's Error.
	Error string `json:"error,omitempty"`
}

// EventStep is one rate of the events phase.
type EventStep struct {
	Index int `json:"index"`
	// Rate is the rate asked for. AchievedRate is the rate the writer
	// achieved, its successful writes over the time from its first write sent
	// to its last answered: the rate of this step, where the server could not
	// keep up with the one asked.
	Rate         float64 `json:"rate"`
	AchievedRate float64 `json:"achievedRate"`
	// WriterSeconds is that time.
	WriterSeconds float64 `json:"writerSeconds"`
	// Writes are the writer's successful writes by kind, and its failures.
	Writes EventWrites `json:"writes"`
	// Delivered counts the handler's events in the step's window, by kind.
	Delivered Events `json:"delivered"`
	// Matched counts the writes whose event reached the handler; Lost those
	// whose event had not arrived a drain time after the writer's last
	// answer; Late those that arrived later than the plan's LateAfter.
	Matched int `json:"matched"`
	Lost    int `json:"lost"`
	Late    int `json:"late"`
	// Duplicates counts events of a write that arrived again. (A delete of a
	// Pod arrives as an update, which sets its deletion timestamp, and then
	// the delete; the update is counted in Delivered, not here.)
	Duplicates int `json:"duplicates,omitempty"`
	// NegativeLatencies counts events that arrived before their write was
	// sent by the clock (a clock step): counted as 0 in Latency.
	NegativeLatencies int `json:"negativeLatencies,omitempty"`
	// Latency is the time from a write sent (the writer's stamp) to its event
	// in the handler, over the writes that arrived, in ms.
	Latency LatencyStats `json:"latency"`
	// CPUPerEvent is the measured process's CPU in the window less the idle
	// CPU for as long, divided by the events delivered, in µs.
	CPUPerEvent float64 `json:"cpuPerEventMicros"`
	// LiveHeapBefore and LiveHeapAfter are the live heap (after a GC) before
	// the step and after it.
	LiveHeapBefore uint64 `json:"liveHeapBeforeBytes"`
	LiveHeapAfter  uint64 `json:"liveHeapAfterBytes"`
	// Window runs from the request to the writer to the last event (or the
	// drain's end); its PeakRatio is over LiveHeapBefore.
	Window Window `json:"window"`
	Error  string `json:"error,omitempty"`
}

// EventWrites counts a step's writes by kind.
type EventWrites struct {
	Status  int `json:"status"`
	Labels  int `json:"labels"`
	Created int `json:"created"`
	Deleted int `json:"deleted"`
	Failed  int `json:"failed"`
}

// Total is the number of successful writes.
func (w EventWrites) Total() int { return w.Status + w.Labels + w.Created + w.Deleted }

// HeapGrowth is the live heap after the step less before it, in bytes.
func (s EventStep) HeapGrowth() int64 { return int64(s.LiveHeapAfter) - int64(s.LiveHeapBefore) }

// GCCPUFraction is the share of the available CPU the garbage collector took
// in the step's window.
func (s EventStep) GCCPUFraction() float64 {
	if s.Window.Runtime.AvailableCPUSeconds == 0 {
		return 0
	}
	return s.Window.Runtime.GCCPUSeconds / s.Window.Runtime.AvailableCPUSeconds
}

// EventsAnswer is what the parent did for a step of the events phase: for
// step 0, the Pods it created to write to; for step k, what it wrote.
type EventsAnswer struct {
	Objects int               `json:"objects,omitempty"`
	Step    dataset.EventStep `json:"step"`
}

// eventsTimes are the windows of the events phase, kept until the windows
// are computed.
type eventsTimes struct {
	idle  listTimes
	steps []listTimes
}

// events runs the events phase: the writer's setup, a quiet window, then
// each rate. A failure is recorded in the result; the error returned ends
// the measurement (ctx ended).
func (m *measurement) events(ctx context.Context) error {
	plan := m.plan.Events
	phase := &EventsPhase{}
	m.res.Events = phase
	if m.spec.Write == nil {
		phase.Error = "no writer for the events phase"
		return nil
	}
	rec, err := newEventRecorder(plan.maxSeq())
	if err != nil {
		phase.Error = err.Error()
		return nil
	}
	m.h.rec.Store(rec)
	defer func() {
		m.h.rec.Store(nil)
		rec.free()
	}()
	if err := m.eventsSetup(ctx, phase); err != nil {
		phase.Error = err.Error()
		return ctx.Err()
	}
	defer m.sampleEvery(plan.SampleEvery.D(), plan.ProbeEvery.D())()
	m.eventTimes = &eventsTimes{}
	idle := &m.eventTimes.idle
	idle.t0, idle.rt0, idle.cpu0 = m.since(), profile.ReadRuntime(), selfCPU()
	if err := sleep(ctx, plan.Idle.D()); err != nil {
		return err
	}
	idle.t1, idle.rt1, idle.cpu1 = m.since(), profile.ReadRuntime(), selfCPU()
	phase.IdleCPUPerSecond = (idle.cpu1 - idle.cpu0).Seconds() / (idle.t1 - idle.t0).Seconds()
	m.mark(idle.t0, "events idle")
	// A CPU profile of the steps, beside the sync's (.events.pprof for .sync.pprof).
	var eventsProfile string
	if m.spec.CPUProfile != "" {
		eventsProfile = strings.TrimSuffix(m.spec.CPUProfile, ".sync.pprof") + ".events.pprof"
	}
	stopProfile, err := startCPUProfile(eventsProfile)
	if err != nil {
		phase.Error = err.Error()
		return nil
	}
	defer stopProfile()
	for k := 1; k <= len(plan.Rates); k++ {
		st, tm := m.eventStep(ctx, rec, k)
		phase.Steps = append(phase.Steps, st)
		m.eventTimes.steps = append(m.eventTimes.steps, tm)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	runtime.GC()
	phase.LiveHeapAfter = heapObjects()
	return nil
}

// sampleEvery sets the sampler's and the probe's intervals (zero keeps one)
// and returns what sets the plan's back.
func (m *measurement) sampleEvery(sample, probe time.Duration) (restore func()) {
	if sample > 0 {
		m.sampler.SetInterval(sample)
	}
	if probe > 0 {
		m.probe.SetInterval(probe)
	}
	return func() {
		m.sampler.SetInterval(m.plan.SampleEvery.D())
		m.probe.SetInterval(m.plan.ProbeEvery.D())
	}
}

// eventsSetup asks the parent for the writer's Pods and waits until the
// cache holds them and has settled, then reads the live heap.
func (m *measurement) eventsSetup(ctx context.Context, phase *EventsPhase) error {
	n0 := m.c.Len()
	answer, err := m.spec.Write(ctx, 0)
	if err != nil {
		return fmt.Errorf("set up the writer's pods: %w", err)
	}
	phase.Objects = answer.Objects
	if err := waitFor(ctx, m.plan.RelistTimeout.D(), func() bool { return m.c.Len() >= n0+answer.Objects }); err != nil {
		return fmt.Errorf("the cache holds %d objects, want %d after the writer's %d: %w", m.c.Len(), n0+answer.Objects, answer.Objects, err)
	}
	m.emit(Event{Kind: "events", Objects: answer.Objects})
	if err := sleep(ctx, m.plan.Settle.D()); err != nil {
		return err
	}
	runtime.GC()
	phase.LiveHeapBefore = heapObjects()
	return nil
}

// eventStep runs step k: it asks the parent to write at the step's rate,
// waits for the events of every write it made (at most the plan's Drain),
// and tallies them.
func (m *measurement) eventStep(ctx context.Context, rec *eventRecorder, k int) (EventStep, listTimes) {
	plan := m.plan.Events
	st := EventStep{Index: k, Rate: plan.Rates[k-1]}
	var w listTimes
	runtime.GC()
	st.LiveHeapBefore = heapObjects()
	base, arrived0, dups0 := m.h.events(), rec.arrived.Load(), rec.dups.Load()
	w.rt0, w.cpu0, w.t0 = profile.ReadRuntime(), selfCPU(), m.since()
	m.mark(w.t0, fmt.Sprintf("%s/s", trimRate(st.Rate)))
	answer, err := m.spec.Write(ctx, k)
	step := answer.Step
	if err == nil && step.Error != "" && step.Writes() == 0 {
		err = errors.New(step.Error)
	}
	if err == nil {
		want := int64(step.Writes())
		_ = waitFor(ctx, plan.Drain.D(), func() bool { return rec.arrived.Load()-arrived0 >= want })
	}
	w.t1, w.rt1, w.cpu1 = m.since(), profile.ReadRuntime(), selfCPU()
	st.Delivered = m.h.events().sub(base)
	st.Duplicates = int(rec.dups.Load() - dups0)
	runtime.GC()
	st.LiveHeapAfter = heapObjects()

	st.AchievedRate, st.WriterSeconds = step.Achieved(), step.Elapsed.Seconds()
	st.Writes = EventWrites{Status: step.Status, Labels: step.Labels, Created: step.Created, Deleted: step.Deleted, Failed: len(step.Failed)}
	t := rec.tally(step, plan.LateAfter.D())
	st.Matched, st.Lost, st.Late, st.NegativeLatencies = t.matched, t.lost, t.late, t.negative
	st.Latency = probeStats(t.latency)
	st.CPUPerEvent = cpuPerEvent(w.cpu1-w.cpu0, m.res.Events.IdleCPUPerSecond, w.t1-w.t0,
		st.Delivered.Adds+st.Delivered.Updates+st.Delivered.Deletes)
	switch {
	case err != nil:
		st.Error = err.Error()
	case st.Lost > 0:
		st.Error = fmt.Sprintf("%d of %d writes never reached the handler within %s", st.Lost, step.Writes(), plan.Drain.D())
	case step.Error != "":
		st.Error = fmt.Sprintf("%d writes failed, the first: %s", len(step.Failed), step.Error)
	}
	m.emit(Event{Kind: "eventstep", Index: k, Step: &st})
	return st, w
}

// cpuPerEvent is the CPU a window of length wall took beyond what the
// process takes at rest (idlePerSecond), per event delivered, in µs.
func cpuPerEvent(cpu time.Duration, idlePerSecond float64, wall time.Duration, events int) float64 {
	if events <= 0 {
		return 0
	}
	return max(0, cpu.Seconds()-idlePerSecond*wall.Seconds()) * 1e6 / float64(events)
}

// trimRate writes a rate without a needless fraction.
func trimRate(r float64) string {
	if r == float64(int64(r)) {
		return fmt.Sprint(int64(r))
	}
	return fmt.Sprintf("%.1f", r)
}

// eventWindows fills the events phase's windows from the sampler and the
// probe.
func (m *measurement) eventWindows(window func(listTimes) Window) {
	ev, tm := m.res.Events, m.eventTimes
	if ev == nil || tm == nil {
		return
	}
	ev.Idle = window(tm.idle)
	for i := range ev.Steps {
		if i >= len(tm.steps) {
			break
		}
		w := window(tm.steps[i])
		w.PeakRatio = ratio(w.PeakHeap, ev.Steps[i].LiveHeapBefore)
		ev.Steps[i].Window = w
	}
}
