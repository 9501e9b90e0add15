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
// allocation inside the window and not after the collection.
func TestSamplerSeesSyntheticPeak(t *testing.T) {
	leakcheck.Check(t)
	runtime.GC()
	before := heapObjects()
	start := time.Now()
	s := StartSampler(context.Background(), start, 2*time.Millisecond)
	defer s.Stop()

	time.Sleep(20 * time.Millisecond)
	t0 := time.Since(start)
	const size = 64 << 20
	for range size / (1 << 20) {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // fresh pages are resident only once written
		}
		sink = append(sink, b)
	}
	time.Sleep(50 * time.Millisecond)
	t1 := time.Since(start)
	sink = nil
	runtime.GC()
	tGC := time.Since(start)
	time.Sleep(50 * time.Millisecond)
	t2 := time.Since(start)

	peak, rss := s.Peak(t0, t1)
	if peak < before+size {
		t.Errorf("peak heap in the allocation window = %d MiB, want at least %d MiB (baseline %d MiB + 64)", peak>>20, (before+size)>>20, before>>20)
	}
	if rss < size {
		t.Errorf("peak RSS in the allocation window = %d MiB, want at least 64 MiB", rss>>20)
	}
	after, _ := s.Peak(tGC+5*time.Millisecond, t2)
	if after >= before+size/2 {
		t.Errorf("peak heap after the GC = %d MiB, want well under %d MiB", after>>20, (before+size)>>20)
	}
	samples := s.Samples()
	if len(samples) < 20 {
		t.Fatalf("got %d samples in %s at 2 ms, want at least 20", len(samples), t2)
	}
	for i := 1; i < len(samples); i++ {
		if samples[i].T < samples[i-1].T {
			t.Fatalf("samples out of order at %d: %s after %s", i, samples[i].T, samples[i-1].T)
		}
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
