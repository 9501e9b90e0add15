package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Lateness is one wake-up of the probe goroutine.
type Lateness struct {
	// T is when the probe woke, since the measurement started.
	T time.Duration
	// Late is how long after its intended wake-up it ran.
	Late time.Duration
}

// Probe is a goroutine that sleeps for a fixed interval in a loop and records how
// late each wake-up is: actual wake minus intended wake. It is what a health
// probe handler or a lease renewal in a controller experiences when the process
// is busy decoding a list or collecting garbage.
type Probe struct {
	start    time.Time
	interval atomic.Int64 // time.Duration; SetInterval changes it
	changed  chan struct{}
	samples  series[Lateness]
	done     chan struct{}
	wg       sync.WaitGroup
}

// StartProbe starts the probe with times measured from start, until ctx ends or
// Stop is called.
func StartProbe(ctx context.Context, start time.Time, interval time.Duration) *Probe {
	p := &Probe{start: start, done: make(chan struct{}), changed: make(chan struct{}, 1)}
	p.interval.Store(int64(interval))
	p.wg.Go(func() { p.loop(ctx) })
	return p
}

// SetInterval changes the probe's sleep at once: a sleep under way ends
// early, unrecorded, and the next is of the new interval.
func (p *Probe) SetInterval(d time.Duration) {
	p.interval.Store(int64(d))
	signal(p.changed)
}

func (p *Probe) loop(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		interval := time.Duration(p.interval.Load())
		intended := time.Now().Add(interval)
		t.Reset(interval)
		select {
		case <-ctx.Done():
			return
		case <-p.done:
			return
		case <-p.changed:
			continue
		case <-t.C:
		}
		woke := time.Now()
		p.samples.add(Lateness{T: woke.Sub(p.start), Late: lateness(intended, woke)})
	}
}

// lateness is actual wake minus intended wake, never negative.
func lateness(intended, woke time.Time) time.Duration {
	return max(0, woke.Sub(intended))
}

// Stop stops the probe and waits for it to end. It is safe to call once.
func (p *Probe) Stop() {
	close(p.done)
	p.wg.Wait()
}

// Release frees the recorded wake-ups, after Stop.
func (p *Probe) Release() { p.samples.release() }

// Window summarises the wake-ups in [from, to].
func (p *Probe) Window(from, to time.Duration) ProbeStats {
	var late []time.Duration
	p.samples.each(func(l Lateness) bool {
		if l.T > to {
			return false
		}
		if l.T >= from {
			late = append(late, l.Late)
		}
		return true
	})
	return probeStats(late)
}
