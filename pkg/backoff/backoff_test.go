package backoff

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const ms = time.Millisecond

func TestDefaultIsClientGoReflectorSchedule(t *testing.T) {
	want := Backoff{Initial: 800 * ms, Factor: 2, Cap: 30 * time.Second, Jitter: 1.0, ResetAfter: 2 * time.Minute}
	if diff := cmp.Diff(want, Default()); diff != "" {
		t.Errorf("Default() (-want +got):\n%s", diff)
	}
	if err := Default().Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
}

func TestStep(t *testing.T) {
	cases := []struct {
		name string
		b    Backoff
		want []time.Duration // Step(0), Step(1), ...
	}{
		{"default doubles to the cap", Default(),
			[]time.Duration{800 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 12800 * ms, 25600 * ms, 30 * time.Second, 30 * time.Second}},
		{"factor 1 is constant", Backoff{Initial: time.Second, Factor: 1, Cap: time.Second},
			[]time.Duration{time.Second, time.Second, time.Second, time.Second}},
		{"factor 1.5", Backoff{Initial: 100 * ms, Factor: 1.5, Cap: time.Second},
			[]time.Duration{100 * ms, 100 * ms, 150 * ms, 225 * ms, 337500 * time.Microsecond, 506250 * time.Microsecond, 759375 * time.Microsecond, time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []time.Duration
			for n := range c.want {
				got = append(got, c.b.Step(n))
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			if got := c.b.Step(math.MaxInt32); got != c.b.Cap {
				t.Errorf("Step(MaxInt32) = %s, want the cap %s (no overflow)", got, c.b.Cap)
			}
		})
	}
}

func TestDelayStaysInJitterRange(t *testing.T) {
	for _, jitter := range []float64{0, 0.5, 1} {
		b := Backoff{Initial: 100 * ms, Factor: 2, Cap: time.Second, Jitter: jitter}
		for n := 1; n <= 8; n++ {
			lo := b.Step(n)
			hi := lo + time.Duration(jitter*float64(lo))
			spread := false
			first := b.Delay(n)
			for range 200 {
				d := b.Delay(n)
				if d < lo || d > hi {
					t.Fatalf("jitter %v: Delay(%d) = %s, want within [%s, %s]", jitter, n, d, lo, hi)
				}
				spread = spread || d != first
			}
			if spread != (jitter > 0) {
				t.Errorf("jitter %v: Delay(%d) varied: %v, want %v", jitter, n, spread, jitter > 0)
			}
		}
	}
}

// MaxAttempts must agree with walking the schedule delay by delay at its
// shortest (no jitter), which is the fastest a failing caller can go.
func TestMaxAttemptsMatchesSchedule(t *testing.T) {
	fast := Backoff{Initial: 10 * ms, Factor: 2, Cap: time.Second}
	cases := []struct {
		b      Backoff
		window time.Duration
		want   int
	}{
		// 10+20+40+80+160+320+640 = 1270 ms of ramp, then one attempt a second.
		{fast, 20 * time.Second, 1 + 7 + 18},
		{fast, 0, 1},
		{fast, 9 * ms, 1},
		{fast, 10 * ms, 2},
		// The defaults: 0.8+1.6+3.2+6.4+12.8+25.6 = 50.4 s of ramp.
		{Default(), 5 * time.Second, 3},
		{Default(), 30 * time.Second, 6},
		{Default(), time.Minute, 1 + 6 + 0},
		{Default(), 10 * time.Minute, 1 + 6 + 18},
		{Backoff{Initial: time.Second, Factor: 1, Cap: time.Second}, time.Minute, 61},
		// 100+150+225+337.5+506.25+759.375 = 2078 ms of ramp, then 1 s.
		{Backoff{Initial: 100 * ms, Factor: 1.5, Cap: time.Second}, 3 * time.Second, 1 + 6 + 0},
		{Backoff{Initial: 100 * ms, Factor: 1.5, Cap: time.Second}, 3100 * ms, 1 + 6 + 1},
		{Backoff{}, time.Minute, math.MaxInt},
	}
	for _, c := range cases {
		if got := c.b.MaxAttempts(c.window); got != c.want {
			t.Errorf("%+v MaxAttempts(%s) = %d, want %d", c.b, c.window, got, c.want)
		}
		if c.b.Initial <= 0 {
			continue
		}
		if got := walk(c.b, c.window); got != c.want {
			t.Errorf("%+v walking the schedule over %s gives %d attempts, want %d", c.b, c.window, got, c.want)
		}
	}
}

func walk(b Backoff, window time.Duration) int {
	attempts, at := 1, time.Duration(0)
	for n := 1; ; n++ {
		at += b.Step(n)
		if at > window {
			return attempts
		}
		attempts++
	}
}

func TestValidate(t *testing.T) {
	ok := Backoff{Initial: ms, Factor: 1, Cap: ms}
	cases := []struct {
		name string
		edit func(*Backoff)
		want string // "" for valid
	}{
		{"smallest valid", func(*Backoff) {}, ""},
		{"zero value", func(b *Backoff) { *b = Backoff{} }, "Initial must be positive"},
		{"negative initial", func(b *Backoff) { b.Initial = -ms }, "Initial must be positive"},
		{"factor below 1", func(b *Backoff) { b.Factor = 0.5 }, "Factor must be at least 1"},
		{"factor NaN", func(b *Backoff) { b.Factor = math.NaN() }, "Factor must be at least 1"},
		{"cap below initial", func(b *Backoff) { b.Cap = ms / 2 }, "Cap must be at least Initial"},
		{"negative jitter", func(b *Backoff) { b.Jitter = -0.1 }, "Jitter must not be negative"},
		{"negative reset", func(b *Backoff) { b.ResetAfter = -time.Second }, "ResetAfter must not be negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := ok
			c.edit(&b)
			err := b.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("Validate() = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// clock is a manual time source for Schedule.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestScheduleNextAndReset(t *testing.T) {
	b := Backoff{Initial: 100 * ms, Factor: 2, Cap: 400 * ms, ResetAfter: time.Minute}
	type step struct {
		advance time.Duration // before the call
		reset   bool          // call Reset instead of Next
		want    time.Duration // Next's result
		fails   int           // Failures() after the call
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"grows to the cap", []step{
			{want: 100 * ms, fails: 1}, {want: 200 * ms, fails: 2}, {want: 400 * ms, fails: 3}, {want: 400 * ms, fails: 4},
		}},
		{"a success resets", []step{
			{want: 100 * ms, fails: 1}, {want: 200 * ms, fails: 2}, {reset: true, fails: 0}, {want: 100 * ms, fails: 1},
		}},
		{"a quiet period of ResetAfter resets", []step{
			{want: 100 * ms, fails: 1}, {want: 200 * ms, fails: 2},
			{advance: time.Minute + ms, want: 100 * ms, fails: 1}, {want: 200 * ms, fails: 2},
		}},
		{"a gap of exactly ResetAfter does not", []step{
			{want: 100 * ms, fails: 1}, {advance: time.Minute, want: 200 * ms, fails: 2},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := &clock{t: time.Unix(1e9, 0)}
			s := NewSchedule(b)
			s.now = clk.now
			for i, st := range c.steps {
				clk.advance(st.advance)
				if st.reset {
					s.Reset()
				} else if got := s.Next(); got != st.want {
					t.Errorf("step %d: Next() = %s, want %s", i, got, st.want)
				}
				if got := s.Failures(); got != st.fails {
					t.Errorf("step %d: Failures() = %d, want %d", i, got, st.fails)
				}
			}
		})
	}
}

func TestScheduleWithoutResetAfterNeverResetsByTime(t *testing.T) {
	clk := &clock{t: time.Unix(1e9, 0)}
	s := NewSchedule(Backoff{Initial: ms, Factor: 2, Cap: time.Second})
	s.now = clk.now
	s.Next()
	clk.advance(24 * time.Hour)
	if got := s.Next(); got != 2*ms {
		t.Errorf("Next() after a day = %s, want %s: only Reset starts again when ResetAfter is 0", got, 2*ms)
	}
}

func TestSleep(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want error
	}{
		{"full wait", live, ms, nil},
		{"no wait", live, 0, nil},
		{"negative wait", live, -time.Second, nil},
		{"context already ended", done, time.Hour, context.Canceled},
		{"context already ended, no wait", done, 0, context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := Sleep(c.ctx, c.d); !errors.Is(err, c.want) {
				t.Errorf("Sleep(%s) = %v, want %v", c.d, err, c.want)
			}
		})
	}
}

func TestSleepStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*ms)
	defer cancel()
	start := time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Sleep = %v, want %v", err, context.DeadlineExceeded)
	}
	if waited := time.Since(start); waited > time.Minute {
		t.Errorf("Sleep waited %s after its context ended", waited)
	}
}
