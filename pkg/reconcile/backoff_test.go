package reconcile

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBackoffSteps(t *testing.T) {
	b := Backoff{Initial: 800 * time.Millisecond, Factor: 2, Cap: 30 * time.Second, Jitter: 0.5}
	var got []time.Duration
	for n := 0; n <= 9; n++ {
		got = append(got, b.Step(n))
	}
	ms := time.Millisecond
	want := []time.Duration{800 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 12800 * ms, 25600 * ms, 30 * time.Second, 30 * time.Second, 30 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if got := b.Step(10000); got != b.Cap {
		t.Errorf("Step(10000) = %s, want the cap %s (no overflow)", got, b.Cap)
	}
}

func TestBackoffDelayStaysInJitterRange(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Factor: 2, Cap: time.Second, Jitter: 0.5}
	for n := 1; n <= 8; n++ {
		lo := b.Step(n)
		hi := lo + lo/2
		spread := false
		first := b.Delay(n)
		for range 200 {
			d := b.Delay(n)
			if d < lo || d > hi {
				t.Fatalf("Delay(%d) = %s, want within [%s, %s]", n, d, lo, hi)
			}
			spread = spread || d != first
		}
		if !spread {
			t.Errorf("Delay(%d) returned %s 200 times: no jitter", n, first)
		}
	}
}

// MaxAttempts must agree with walking the schedule delay by delay at its
// shortest (no jitter), which is the fastest a failing key can run.
func TestMaxAttemptsMatchesSchedule(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		b      Backoff
		window time.Duration
		want   int
	}{
		// 10+20+40+80+160+320+640 = 1270 ms of ramp, then one run a second.
		{Backoff{Initial: 10 * ms, Factor: 2, Cap: time.Second}, 20 * time.Second, 1 + 7 + 18},
		{Backoff{Initial: 10 * ms, Factor: 2, Cap: time.Second}, 0, 1},
		{Backoff{Initial: 10 * ms, Factor: 2, Cap: time.Second}, 9 * ms, 1},
		{Backoff{Initial: 10 * ms, Factor: 2, Cap: time.Second}, 10 * ms, 2},
		// The defaults: 0.8+1.6+3.2+6.4+12.8+25.6 = 50.4 s of ramp.
		{DefaultBackoff(), time.Minute, 1 + 6 + 0},
		{DefaultBackoff(), 10 * time.Minute, 1 + 6 + 18},
		{Backoff{Initial: time.Second, Factor: 1, Cap: time.Second}, time.Minute, 61},
	}
	for _, c := range cases {
		if got := c.b.MaxAttempts(c.window); got != c.want {
			t.Errorf("%+v MaxAttempts(%s) = %d, want %d", c.b, c.window, got, c.want)
		}
		if got := walk(c.b, c.window); got != c.want {
			t.Errorf("%+v walking the schedule over %s gives %d runs, want %d", c.b, c.window, got, c.want)
		}
	}
}

func walk(b Backoff, window time.Duration) int {
	runs, at := 1, time.Duration(0)
	for n := 1; ; n++ {
		at += b.Step(n)
		if at > window {
			return runs
		}
		runs++
	}
}

func TestLimiterCountsAndForgets(t *testing.T) {
	l := newLimiter(Backoff{Initial: time.Millisecond, Factor: 2, Cap: time.Second})
	a, b := key("ns", "a"), key("ns", "b")
	var got []time.Duration
	for range 4 {
		got = append(got, l.When(a))
	}
	l.When(b)
	ms := time.Millisecond
	if diff := cmp.Diff([]time.Duration{ms, 2 * ms, 4 * ms, 8 * ms}, got); diff != "" {
		t.Errorf("delays of a (-want +got):\n%s", diff)
	}
	if n := l.NumRequeues(a); n != 4 {
		t.Errorf("NumRequeues(a) = %d, want 4", n)
	}
	if n := l.len(); n != 2 {
		t.Errorf("keys in backoff = %d, want 2", n)
	}
	l.Forget(a)
	if n := l.NumRequeues(a); n != 0 {
		t.Errorf("NumRequeues(a) after Forget = %d, want 0", n)
	}
	if d := l.When(a); d != ms {
		t.Errorf("first delay after Forget = %s, want the base %s", d, ms)
	}
}
