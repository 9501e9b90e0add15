package bench

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cachetune/cachetune/internal/leakcheck"
)

func TestLateness(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name           string
		intended, woke time.Time
		want           time.Duration
	}{
		{"on time", base, base, 0},
		{"late", base, base.Add(3 * time.Millisecond), 3 * time.Millisecond},
		{"early is on time", base, base.Add(-time.Microsecond), 0},
	} {
		if got := lateness(tc.intended, tc.woke); got != tc.want {
			t.Errorf("%s: lateness = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestProbeStats(t *testing.T) {
	msd := func(v ...float64) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x * float64(time.Millisecond))
		}
		return out
	}
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1) // 1..100 ms, shuffled below
	}
	hundred[0], hundred[99] = hundred[99], hundred[0]
	for _, tc := range []struct {
		name string
		in   []time.Duration
		want LatencyStats
	}{
		{"empty", nil, LatencyStats{}},
		{"one", msd(2), LatencyStats{Count: 1, P50: 2, P99: 2, Max: 2}},
		{"1..100 ms", msd(hundred...), LatencyStats{Count: 100, P50: 50, P99: 99, Max: 100}},
		{"one stall", msd(0.1, 0.1, 0.1, 40), LatencyStats{Count: 4, P50: 0.1, P99: 40, Max: 40}},
	} {
		if diff := cmp.Diff(tc.want, probeStats(tc.in)); diff != "" {
			t.Errorf("%s: probeStats (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestProbeWindowSelectsByTime(t *testing.T) {
	p := &Probe{}
	for i, late := range []time.Duration{1, 2, 30, 4, 5} {
		p.samples.add(Lateness{T: time.Duration(i+1) * time.Second, Late: late * time.Millisecond})
	}
	got := p.Window(2*time.Second, 4*time.Second) // 2, 30, 4
	want := LatencyStats{Count: 3, P50: 4, P99: 30, Max: 30}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Window (-want +got):\n%s", diff)
	}
}

// TestProbeRuns checks the live probe until it has woken 20 times: each
// wake-up comes at least an interval after the one before (the probe sleeps
// an interval each time), so there are never more than the time allows; and
// each lateness is what that wake-up overslept, never more than its gap to
// the previous wake-up less the interval (the probe asks for a wake-up an
// interval after the previous one at the earliest), so it is not counted
// from the start or with the interval in it. None of this depends on how
// busy the machine is; only how long the 20 wake-ups take does.
func TestProbeRuns(t *testing.T) {
	leakcheck.Check(t)
	const interval, wakeUps = time.Millisecond, 20
	start := time.Now()
	p := StartProbe(context.Background(), start, interval)
	for deadline := time.Now().Add(30 * time.Second); p.Window(0, time.Since(start)).Count < wakeUps; time.Sleep(interval) {
		if time.Now().After(deadline) {
			p.Stop()
			t.Fatalf("probe woke %d times in 30 s at %s", p.Window(0, time.Since(start)).Count, interval)
		}
	}
	p.Stop()
	elapsed := time.Since(start)
	var samples []Lateness
	p.samples.each(func(l Lateness) bool { samples = append(samples, l); return true })
	if n := len(samples); n < wakeUps || n > int(elapsed/interval) {
		t.Errorf("probe woke %d times in %s at %s, want %d to %d", n, elapsed, interval, wakeUps, int(elapsed/interval))
	}
	for i, s := range samples {
		prev := time.Duration(0)
		if i > 0 {
			prev = samples[i-1].T
		}
		if gap := s.T - prev; gap < interval || s.Late < 0 || s.Late > gap-interval {
			t.Errorf("wake-up %d at %s, %s after the previous: lateness %s, want 0 to %s", i, s.T, gap, s.Late, gap-interval)
		}
	}
	if st := p.Window(0, elapsed); st.Max < st.P50 || st.P50 < 0 {
		t.Errorf("lateness p50 %.2f ms, max %.2f ms: not a distribution", st.P50, st.Max)
	}
	p.Release()
}

// TestSetIntervalSlowsSamplerAndProbe: after SetInterval to an hour, the
// sampler and the probe each take at most one more reading (the one already
// due) however long the test waits; back at 1 ms they run again. The events
// phase relies on it to keep their CPU out of the steps' (EventsPlan).
func TestSetIntervalSlowsSamplerAndProbe(t *testing.T) {
	leakcheck.Check(t)
	start := time.Now()
	s := StartSampler(context.Background(), start, time.Millisecond)
	p := StartProbe(context.Background(), start, time.Millisecond)
	defer func() { s.Stop(); p.Stop(); s.Release(); p.Release() }()
	counts := func() (int, int) {
		now := time.Since(start)
		return s.Gaps(0, now).Samples, p.Window(0, now).Count
	}
	waitFor := func(what string, done func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !done(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30 s", what)
			}
		}
	}
	waitFor("5 readings each at 1 ms", func() bool { a, b := counts(); return a >= 5 && b >= 5 })
	s.SetInterval(time.Hour)
	p.SetInterval(time.Hour)
	// A reading due under the old interval may still come; after it, none.
	time.Sleep(50 * time.Millisecond)
	a0, b0 := counts()
	time.Sleep(200 * time.Millisecond)
	if a, b := counts(); a > a0+1 || b > b0+1 {
		t.Errorf("at an hour's interval the sampler took %d and the probe %d readings in 200 ms", a-a0, b-b0)
	}
	s.SetInterval(time.Millisecond)
	waitFor("the sampler back at 1 ms", func() bool { a, _ := counts(); return a >= a0+5 })
}
