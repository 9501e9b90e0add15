package bench

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/cachetune/cachetune/internal/leakcheck"
)

var sink [][]byte

// TestSamplerSeesSyntheticPeak allocates 64 MiB, holds it for a while, drops it
// and collects it: the sampler must report a peak that includes the
// allocation inside the window and not after the collection. The windows end
// at samples, not at a sleep: it waits for the sampler to read the heap after
// each step, so a loaded machine that lets it run late only makes the test
// wait longer.
func TestSamplerSeesSyntheticPeak(t *testing.T) {
	leakcheck.Check(t)
	const interval = 2 * time.Millisecond
	runtime.GC()
	before := heapObjects()
	start := time.Now()
	s := StartSampler(context.Background(), start, interval)
	defer s.Stop()

	t0 := time.Since(start)
	const size = 64 << 20
	for range size / (1 << 20) {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // fresh pages are resident only once written
		}
		sink = append(sink, b)
	}
	t1 := sampledAfter(t, s, time.Since(start))
	sink = nil
	runtime.GC()
	tGC := time.Since(start)
	first := sampledAfter(t, s, tGC)
	t2 := sampledAfter(t, s, first)

	peak, rss := s.Peak(t0, t1)
	if peak < before+size {
		t.Errorf("peak heap in the allocation window = %d MiB, want at least %d MiB (baseline %d MiB + 64)", peak>>20, (before+size)>>20, before>>20)
	}
	if rss < size {
		t.Errorf("peak RSS in the allocation window = %d MiB, want at least 64 MiB", rss>>20)
	}
	after, _ := s.Peak(first+1, t2)
	if after == 0 || after >= before+size/2 {
		t.Errorf("peak heap after the GC = %d MiB, want some, and well under %d MiB", after>>20, (before+size)>>20)
	}
	samples := s.Samples()
	if n, most := len(samples), int(t2/interval)+2; n < 4 || n > most {
		t.Fatalf("got %d samples in %s at %s, want 4 to %d", n, t2, interval, most)
	}
	for i := 1; i < len(samples); i++ {
		if samples[i].T < samples[i-1].T {
			t.Fatalf("samples out of order at %d: %s after %s", i, samples[i].T, samples[i-1].T)
		}
	}
}

// sampledAfter waits until the sampler read the heap wholly after at, and
// returns that sample's time: the second sample stamped after at, since a
// sample is stamped after its reading and the next is read after that.
func sampledAfter(t *testing.T, s *Sampler, at time.Duration) time.Duration {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		seen := 0
		for _, m := range s.Samples() {
			if m.T > at {
				if seen++; seen == 2 {
					return m.T
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sample read after %s within 30 s", at)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestParseStatmRSS(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   uint64
		wantOK bool
	}{
		{"311430 12345 4567 1 0 23456 0\n", 12345, true},
		{"1 2", 2, true},
		{"311430", 0, false},
		{"", 0, false},
		{"1 x 3", 0, false},
	} {
		got, ok := parseStatmRSS([]byte(tc.in))
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("parseStatmRSS(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestSeriesAcrossChunks(t *testing.T) {
	var s series[int]
	n := 3*chunkLen + 17
	for i := range n {
		s.add(i)
	}
	got := s.all()
	if len(got) != n {
		t.Fatalf("len = %d, want %d", len(got), n)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("sample %d = %d", i, v)
		}
	}
}
