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
	// Objects of the baseline that die meanwhile (the test framework's) are
	// swept by the collections the allocation sets off: allow 1 MiB of them.
	if peak < before+size-1<<20 {
		t.Errorf("peak heap in the allocation window = %d bytes, want at least %d (baseline %d + 64 MiB)", peak, before+size, before)
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

// TestSeriesStaysOffTheHeap records a million samples, as a sampler does in
// half an hour at 2 ms: the heap being measured must not grow with them.
func TestSeriesStaysOffTheHeap(t *testing.T) {
	var s series[MemSample]
	runtime.GC()
	before := heapObjects()
	const n = 1 << 20
	for i := range n {
		s.add(MemSample{T: time.Duration(i), Heap: uint64(i)})
	}
	runtime.GC()
	grown := int64(heapObjects()) - int64(before)
	var peak uint64
	s.each(func(m MemSample) bool { peak = max(peak, m.Heap); return true })
	if peak != n-1 {
		t.Fatalf("highest sample %d, want %d", peak, n-1)
	}
	// 24 MB of samples; the chunk headers on the heap are a few KB.
	if grown > 64<<10 {
		t.Errorf("the heap grew by %d bytes while recording %d samples (%d bytes): they are on the heap", grown, n, n*24)
	}
	s.release()
	if got := s.all(); len(got) != 0 {
		t.Errorf("%d samples after release", len(got))
	}
	// Released, it records again.
	s.add(MemSample{Heap: 7})
	if got := s.all(); len(got) != 1 || got[0].Heap != 7 {
		t.Errorf("after release and one add: %+v", got)
	}
	s.release()
}

func TestOffHeapRefusesPointers(t *testing.T) {
	if _, err := offHeap[serverSample](4); err == nil {
		t.Error("offHeap accepted a type holding a pointer (time.Time's location)")
	}
	if _, err := offHeap[[]int](4); err == nil {
		t.Error("offHeap accepted a slice type")
	}
	// A series of such a type keeps its samples on the heap.
	var s series[serverSample]
	s.add(serverSample{rss: 1})
	if s.mapped[0] {
		t.Error("a chunk of serverSample was mapped outside the heap")
	}
	s.release()
}

func TestSamplerGaps(t *testing.T) {
	var s Sampler
	for _, ms := range []int{0, 2, 4, 11, 13} {
		s.samples.add(MemSample{T: time.Duration(ms) * time.Millisecond})
	}
	defer s.Release()
	for _, tc := range []struct {
		from, to int
		want     Sampling
	}{
		{0, 13, Sampling{Samples: 5, LongestGapMs: 7}},
		{1, 4, Sampling{Samples: 2, LongestGapMs: 2}}, // from the edge at 1 to 2, 2 to 4, 4 to the edge
		{5, 10, Sampling{Samples: 0, LongestGapMs: 5}},
		{11, 20, Sampling{Samples: 2, LongestGapMs: 7}},
	} {
		if got := s.Gaps(time.Duration(tc.from)*time.Millisecond, time.Duration(tc.to)*time.Millisecond); got != tc.want {
			t.Errorf("Gaps(%d ms, %d ms) = %+v, want %+v", tc.from, tc.to, got, tc.want)
		}
	}
}

// BenchmarkSample measures one heap and RSS sample, what the sampler does at
// every tick: at 2 ms, ns/op divided by 20,000 is the share of a CPU it takes.
func BenchmarkSample(b *testing.B) {
	r := newMemReader()
	defer r.close()
	start := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		_ = r.read(start)
	}
}
