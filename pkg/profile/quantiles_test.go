package profile

import (
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var inf = math.Inf(1)

func TestHistogramQuantile(t *testing.T) {
	tests := []struct {
		name string
		h    Histogram
		q    []float64
		want []float64
	}{
		{
			name: "nil histogram",
			h:    Histogram{},
			q:    []float64{0, 0.5, 1},
			want: []float64{0, 0, 0},
		},
		{
			name: "empty window",
			h:    Histogram{Counts: []uint64{0, 0, 0}, Buckets: []float64{0, 1, 2, 3}},
			q:    []float64{0, 0.5, 0.99, 1},
			want: []float64{0, 0, 0, 0},
		},
		{
			name: "single bucket interpolates",
			h:    Histogram{Counts: []uint64{10}, Buckets: []float64{1, 2}},
			q:    []float64{0, 0.5, 0.99, 1},
			want: []float64{1, 1.5, 1.99, 2},
		},
		{
			name: "several buckets",
			h:    Histogram{Counts: []uint64{1, 2, 1}, Buckets: []float64{0, 1, 2, 4}},
			q:    []float64{0, 0.25, 0.5, 0.99, 1},
			want: []float64{0, 1, 1.5, 3.92, 4},
		},
		{
			name: "empty bucket between full ones",
			h:    Histogram{Counts: []uint64{2, 0, 2}, Buckets: []float64{0, 1, 2, 3}},
			q:    []float64{0.5, 0.75, 1},
			want: []float64{1, 2.5, 3},
		},
		{
			name: "samples only in the -Inf edge bucket use its finite edge",
			h:    Histogram{Counts: []uint64{5, 0}, Buckets: []float64{-inf, 1, 2}},
			q:    []float64{0, 0.5, 1},
			want: []float64{1, 1, 1},
		},
		{
			name: "samples only in the +Inf edge bucket use its finite edge",
			h:    Histogram{Counts: []uint64{0, 4}, Buckets: []float64{0, 1, inf}},
			q:    []float64{0, 0.5, 1},
			want: []float64{1, 1, 1},
		},
		{
			name: "both edges infinite, samples in between",
			h:    Histogram{Counts: []uint64{0, 10, 0}, Buckets: []float64{-inf, 0, 1, inf}},
			q:    []float64{0, 0.5, 1},
			want: []float64{0, 0.5, 1},
		},
		{
			name: "tail in the +Inf bucket",
			h:    Histogram{Counts: []uint64{99, 1}, Buckets: []float64{0, 1, inf}},
			q:    []float64{0.5, 0.99, 1},
			want: []float64{0.50505050505, 1, 1},
		},
		{
			name: "one bucket from -Inf to +Inf",
			h:    Histogram{Counts: []uint64{3}, Buckets: []float64{-inf, inf}},
			q:    []float64{0, 0.5, 1},
			want: []float64{0, 0, 0},
		},
		{
			name: "q out of range is clamped, NaN reads as 0",
			h:    Histogram{Counts: []uint64{10}, Buckets: []float64{1, 2}},
			q:    []float64{-1, 2, math.NaN()},
			want: []float64{1, 2, 1},
		},
		{
			name: "malformed shape",
			h:    Histogram{Counts: []uint64{1, 1}, Buckets: []float64{0, 1}},
			q:    []float64{0, 0.5, 1},
			want: []float64{0, 0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make([]float64, len(tt.q))
			for i, q := range tt.q {
				got[i] = tt.h.Quantile(q)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("Quantile(%v) mismatch (-want +got):\n%s", tt.q, diff)
			}
		})
	}
}

func TestHistogramMaxAndCount(t *testing.T) {
	tests := []struct {
		name      string
		h         Histogram
		wantMax   float64
		wantCount uint64
	}{
		{"empty", Histogram{}, 0, 0},
		{"zero counts", Histogram{Counts: []uint64{0, 0}, Buckets: []float64{0, 1, 2}}, 0, 0},
		{"highest non-empty upper edge", Histogram{Counts: []uint64{3, 2, 0}, Buckets: []float64{0, 1, 2, 3}}, 2, 5},
		{"+Inf upper edge uses lower edge", Histogram{Counts: []uint64{1, 1}, Buckets: []float64{0, 5, inf}}, 5, 2},
		{"-Inf lower edge bucket", Histogram{Counts: []uint64{7, 0}, Buckets: []float64{-inf, 0.5, 1}}, 0.5, 7},
		{"only bucket spans everything", Histogram{Counts: []uint64{1}, Buckets: []float64{-inf, inf}}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.h.Max(); got != tt.wantMax {
				t.Errorf("Max() = %v, want %v", got, tt.wantMax)
			}
			if got := tt.h.Count(); got != tt.wantCount {
				t.Errorf("Count() = %v, want %v", got, tt.wantCount)
			}
		})
	}
}

func TestHistogramSub(t *testing.T) {
	edges := []float64{0, 1, 2, 3}
	tests := []struct {
		name           string
		later, earlier Histogram
		want           Histogram
	}{
		{
			name:    "delta of two snapshots",
			later:   Histogram{Counts: []uint64{5, 7, 9}, Buckets: edges},
			earlier: Histogram{Counts: []uint64{5, 3, 0}, Buckets: edges},
			want:    Histogram{Counts: []uint64{0, 4, 9}, Buckets: edges},
		},
		{
			name:    "no change gives an empty window",
			later:   Histogram{Counts: []uint64{5, 7, 9}, Buckets: edges},
			earlier: Histogram{Counts: []uint64{5, 7, 9}, Buckets: edges},
			want:    Histogram{Counts: []uint64{0, 0, 0}, Buckets: edges},
		},
		{
			name:    "zero earlier returns later",
			later:   Histogram{Counts: []uint64{1, 2, 3}, Buckets: edges},
			earlier: Histogram{},
			want:    Histogram{Counts: []uint64{1, 2, 3}, Buckets: edges},
		},
		{
			name:    "different edges returns later",
			later:   Histogram{Counts: []uint64{1, 2, 3}, Buckets: edges},
			earlier: Histogram{Counts: []uint64{1, 1, 1}, Buckets: []float64{0, 1, 2, 4}},
			want:    Histogram{Counts: []uint64{1, 2, 3}, Buckets: edges},
		},
		{
			name:    "a count that went down clamps to zero",
			later:   Histogram{Counts: []uint64{1, 2, 3}, Buckets: edges},
			earlier: Histogram{Counts: []uint64{2, 2, 2}, Buckets: edges},
			want:    Histogram{Counts: []uint64{0, 0, 1}, Buckets: edges},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.later.Counts[0]
			got := tt.later.Sub(tt.earlier)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Sub mismatch (-want +got):\n%s", diff)
			}
			if tt.later.Counts[0] != before {
				t.Errorf("Sub modified its receiver")
			}
		})
	}
}

func TestHistogramLatency(t *testing.T) {
	h := Histogram{Counts: []uint64{0, 100, 0}, Buckets: []float64{0, 0.001, 0.002, inf}}
	want := LatencyStats{P50: 1500 * time.Microsecond, P99: 1990 * time.Microsecond, Max: 2 * time.Millisecond, Count: 100}
	got := h.Latency()
	approx := cmp.Comparer(func(a, b time.Duration) bool { return (a - b).Abs() <= time.Nanosecond })
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("Latency mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(LatencyStats{}, Histogram{}.Latency()); diff != "" {
		t.Errorf("Latency of an empty histogram (-want +got):\n%s", diff)
	}
}

func TestRuntimeSnapshotSince(t *testing.T) {
	edges := []float64{0, 0.001, 0.002}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	earlier := RuntimeSnapshot{
		At:              t0,
		SchedLatency:    Histogram{Counts: []uint64{10, 0}, Buckets: edges},
		GCPauses:        Histogram{Counts: []uint64{1, 1}, Buckets: edges},
		GCCPUSeconds:    1,
		TotalCPUSeconds: 10,
	}
	later := RuntimeSnapshot{
		At:              t0.Add(3 * time.Second),
		SchedLatency:    Histogram{Counts: []uint64{10, 4}, Buckets: edges},
		GCPauses:        Histogram{Counts: []uint64{1, 1}, Buckets: edges},
		GCCPUSeconds:    1.5,
		TotalCPUSeconds: 12,
	}
	want := RuntimeWindow{
		Duration:      3 * time.Second,
		SchedLatency:  LatencyStats{P50: 1500 * time.Microsecond, P99: 1990 * time.Microsecond, Max: 2 * time.Millisecond, Count: 4},
		GCPauses:      LatencyStats{},
		GCCPUFraction: 0.25,
	}
	approx := cmp.Comparer(func(a, b time.Duration) bool { return (a - b).Abs() <= time.Nanosecond })
	if diff := cmp.Diff(want, later.Since(earlier), approx, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("Since mismatch (-want +got):\n%s", diff)
	}
	// No CPU accounted in the window: the fraction is 0, not NaN.
	if got := later.Since(later).GCCPUFraction; got != 0 {
		t.Errorf("GCCPUFraction of an empty window = %v, want 0", got)
	}
}

func TestReadRuntime(t *testing.T) {
	before := ReadRuntime()
	runtime.GC()
	// Wake goroutines so the scheduler records latencies in the window.
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() { defer wg.Done(); time.Sleep(time.Millisecond) }()
	}
	wg.Wait()
	after := ReadRuntime()

	for name, h := range map[string]Histogram{"SchedLatency": after.SchedLatency, "GCPauses": after.GCPauses} {
		if len(h.Buckets) != len(h.Counts)+1 || len(h.Counts) == 0 {
			t.Errorf("%s: %d buckets for %d counts", name, len(h.Buckets), len(h.Counts))
		}
	}
	if after.HeapObjectsBytes == 0 || after.HeapGoalBytes == 0 || after.Goroutines == 0 || after.TotalCPUSeconds <= 0 {
		t.Errorf("ReadRuntime() has zero gauges: %+v", after)
	}
	w := after.Since(before)
	if w.Duration <= 0 {
		t.Errorf("window duration %v, want > 0", w.Duration)
	}
	if w.GCPauses.Count == 0 {
		t.Errorf("no GC pause recorded across runtime.GC()")
	}
	if w.SchedLatency.Count == 0 {
		t.Errorf("no scheduler latency recorded across 50 goroutine wake-ups")
	}
	if w.SchedLatency.P50 > w.SchedLatency.P99 || w.SchedLatency.P99 > w.SchedLatency.Max {
		t.Errorf("quantiles out of order: %+v", w.SchedLatency)
	}
	if w.GCCPUFraction < 0 || w.GCCPUFraction > 1 {
		t.Errorf("GCCPUFraction = %v, want within [0, 1]", w.GCCPUFraction)
	}
}

func TestReadRuntimeConcurrent(t *testing.T) {
	// The pooled sample slices must never be shared: -race checks it.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				s := ReadRuntime()
				if len(s.SchedLatency.Counts) == 0 {
					t.Error("empty scheduler histogram")
					return
				}
			}
		}()
	}
	wg.Wait()
}
