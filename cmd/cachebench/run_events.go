package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

const eventsUsage = `events phase after the re-lists: write rates, comma-separated writes per second, e.g. 100,1000,5000; a writer of its own creates a tenth as many Pods as --pods (10 to 1,000) and changes them at each rate for --event-step (status patches, label changes, creates, deletes), and each mode reports delivery latency, CPU per event, heap and lost events (use --relists 0 for this phase alone)`

// parseEvents reads --events, --event-step and --event-sample-every into the
// plan's events phase.
func (o *runOptions) parseEvents(list string, step, sample time.Duration) error {
	if strings.TrimSpace(list) == "" {
		return nil
	}
	var rates []float64
	for _, f := range strings.Split(list, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(r > 0) || r > 1e6 {
			return fmt.Errorf("--events takes write rates per second above 0, got %q", f)
		}
		rates = append(rates, r)
	}
	if step <= 0 {
		return fmt.Errorf("--event-step must be positive, got %s", step)
	}
	if sample <= 0 {
		return fmt.Errorf("--event-sample-every must be positive, got %s", sample)
	}
	o.Plan.Events = bench.DefaultEvents(rates...)
	o.Plan.Events.Step = bench.Duration(step)
	o.Plan.Events.SampleEvery, o.Plan.Events.ProbeEvery = bench.Duration(sample), bench.Duration(sample)
	// The writer's own Pods: a tenth of the dataset's, 10 to 1,000.
	o.Plan.Events.Objects = min(max(o.Spec.Pods/10, 10), o.Plan.Events.Objects)
	return nil
}

// checkEvents checks that the events phase has Pods to write to.
func (o *runOptions) checkEvents() error {
	if o.Plan.Events == nil {
		return nil
	}
	for _, gvr := range o.Resources {
		if gvr == dataset.PodsGVR {
			return nil
		}
	}
	return errors.New("--events writes Pods: --resources must include pods")
}

// parseDuration reads a duration flag into a plan's Duration, which must be
// positive.
func parseDuration(v string, to *bench.Duration) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return err
	}
	if d <= 0 {
		return fmt.Errorf("must be positive, got %s", d)
	}
	*to = bench.Duration(d)
	return nil
}
