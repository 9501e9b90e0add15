package profile

import (
	"math"
	"runtime/metrics"
	"slices"
	"sync"
	"time"
)

// Histogram is a bucketed distribution with the shape of runtime/metrics'
// Float64Histogram: Counts[i] samples fell in [Buckets[i], Buckets[i+1]), so
// len(Buckets) == len(Counts)+1, and the outer edges may be -Inf and +Inf.
//
// Runtime histograms are cumulative since process start; take two snapshots
// and Sub them to look at a window, which is what a re-list or a benchmark
// phase needs.
type Histogram struct {
	Counts  []uint64
	Buckets []float64
}

// Sub returns the samples recorded between earlier and h, both cumulative
// snapshots of the same metric. If earlier is empty or has different bucket
// edges (it is not an earlier snapshot of the same metric), Sub returns a copy
// of h. A bucket whose count went down, which cumulative histograms never do,
// is clamped to zero rather than wrapping around.
func (h Histogram) Sub(earlier Histogram) Histogram {
	out := Histogram{Counts: slices.Clone(h.Counts), Buckets: h.Buckets}
	if len(earlier.Counts) != len(h.Counts) || !slices.Equal(earlier.Buckets, h.Buckets) {
		return out
	}
	for i, c := range earlier.Counts {
		if out.Counts[i] >= c {
			out.Counts[i] -= c
		} else {
			out.Counts[i] = 0
		}
	}
	return out
}

// Count returns the number of samples in the histogram.
func (h Histogram) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile returns an estimate of the q-quantile (0 <= q <= 1), in the
// histogram's unit, by linear interpolation inside the bucket that holds the
// q-th sample. q is clamped to [0, 1] (NaN counts as 0); an empty histogram
// gives 0.
//
// An infinite edge cannot be interpolated against, so a sample in the -Inf or
// +Inf edge bucket is reported at that bucket's finite edge: the result never
// is infinite. q == 0 gives the lower edge of the lowest non-empty bucket and
// q == 1 gives Max.
func (h Histogram) Quantile(q float64) float64 {
	total := h.Count()
	if total == 0 || len(h.Buckets) != len(h.Counts)+1 {
		return 0
	}
	switch {
	case math.IsNaN(q) || q <= 0:
		for i, c := range h.Counts {
			if c > 0 {
				return interpolate(h.Buckets[i], h.Buckets[i+1], 0)
			}
		}
	case q >= 1:
		return h.Max()
	}
	rank := q * float64(total)
	var below float64
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		next := below + float64(c)
		if rank <= next {
			return interpolate(h.Buckets[i], h.Buckets[i+1], (rank-below)/float64(c))
		}
		below = next
	}
	// Rounding can leave rank a hair above the total.
	return h.Max()
}

// interpolate places frac of the way through [lo, hi), falling back to the
// finite edge when the other is infinite.
func interpolate(lo, hi, frac float64) float64 {
	switch {
	case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		return 0
	case math.IsInf(lo, -1):
		return hi
	case math.IsInf(hi, 1):
		return lo
	}
	return lo + frac*(hi-lo)
}

// Max returns the upper edge of the highest non-empty bucket: the smallest
// value the histogram can prove no sample exceeded. If that edge is +Inf the
// bucket's lower edge is returned instead, so the result is always finite. An
// empty histogram gives 0.
func (h Histogram) Max() float64 {
	if len(h.Buckets) != len(h.Counts)+1 {
		return 0
	}
	for i := len(h.Counts) - 1; i >= 0; i-- {
		if h.Counts[i] == 0 {
			continue
		}
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		switch {
		case !math.IsInf(hi, 1):
			return hi
		case !math.IsInf(lo, -1):
			return lo
		}
		return 0
	}
	return 0
}

// LatencyStats summarises a latency histogram as durations.
type LatencyStats struct {
	P50, P99, Max time.Duration
	Count         uint64
}

// Latency reads h as seconds (the unit of every runtime/metrics latency) and
// returns its median, 99th percentile, maximum and sample count.
func (h Histogram) Latency() LatencyStats {
	return LatencyStats{
		P50:   seconds(h.Quantile(0.50)),
		P99:   seconds(h.Quantile(0.99)),
		Max:   seconds(h.Max()),
		Count: h.Count(),
	}
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second))
}

// The runtime/metrics names ReadRuntime reads, in the order of the sample
// slice.
const (
	metricSchedLatency = "/sched/latencies:seconds"
	metricGCPauses     = "/sched/pauses/total/gc:seconds"
	metricGCCPU        = "/cpu/classes/gc/total:cpu-seconds"
	metricTotalCPU     = "/cpu/classes/total:cpu-seconds"
	metricHeapObjects  = "/memory/classes/heap/objects:bytes"
	metricHeapGoal     = "/gc/heap/goal:bytes"
	metricGoroutines   = "/sched/goroutines:goroutines"
)

// RuntimeSnapshot is one reading of the runtime metrics that matter for a
// controller's latency and memory. The histograms are cumulative since the
// process started; compare two snapshots with Since.
type RuntimeSnapshot struct {
	// At is when the snapshot was read.
	At time.Time
	// SchedLatency is the time goroutines spent runnable before running.
	SchedLatency Histogram
	// GCPauses is the time the world was stopped for the garbage collector.
	GCPauses Histogram
	// GCCPUSeconds and TotalCPUSeconds are the runtime's estimate of the CPU
	// time spent on GC and in total; the runtime refreshes them at each GC.
	GCCPUSeconds, TotalCPUSeconds float64
	// HeapObjectsBytes is the memory held by live and not yet swept heap
	// objects: the number to watch for a re-list spike.
	HeapObjectsBytes uint64
	// HeapGoalBytes is the heap size at which the next GC will finish.
	HeapGoalBytes uint64
	// Goroutines is the number of live goroutines.
	Goroutines uint64
}

// samplePool keeps sample slices between ReadRuntime calls: metrics.Read can
// then reuse each histogram's Counts, and concurrent callers never share one.
var samplePool = sync.Pool{New: func() any {
	names := []string{
		metricSchedLatency, metricGCPauses, metricGCCPU, metricTotalCPU,
		metricHeapObjects, metricHeapGoal, metricGoroutines,
	}
	s := make([]metrics.Sample, len(names))
	for i, n := range names {
		s[i].Name = n
	}
	return &s
}}

// ReadRuntime reads the runtime metrics in one metrics.Read call, so the
// values are consistent with each other. It is cheap (a few microseconds, no
// stop-the-world) and safe to call from several goroutines.
func ReadRuntime() RuntimeSnapshot {
	sp := samplePool.Get().(*[]metrics.Sample)
	defer samplePool.Put(sp)
	s := *sp
	metrics.Read(s)
	return RuntimeSnapshot{
		At:               time.Now(),
		SchedLatency:     histogramOf(s[0].Value),
		GCPauses:         histogramOf(s[1].Value),
		GCCPUSeconds:     float64Of(s[2].Value),
		TotalCPUSeconds:  float64Of(s[3].Value),
		HeapObjectsBytes: uint64Of(s[4].Value),
		HeapGoalBytes:    uint64Of(s[5].Value),
		Goroutines:       uint64Of(s[6].Value),
	}
}

// histogramOf copies the counts, which the next Read may overwrite; bucket
// edges never change for a metric and may be shared.
func histogramOf(v metrics.Value) Histogram {
	if v.Kind() != metrics.KindFloat64Histogram {
		return Histogram{}
	}
	h := v.Float64Histogram()
	return Histogram{Counts: slices.Clone(h.Counts), Buckets: h.Buckets}
}

func float64Of(v metrics.Value) float64 {
	if v.Kind() != metrics.KindFloat64 {
		return 0
	}
	return v.Float64()
}

func uint64Of(v metrics.Value) uint64 {
	if v.Kind() != metrics.KindUint64 {
		return 0
	}
	return v.Uint64()
}

// RuntimeWindow describes what the runtime did between two snapshots.
type RuntimeWindow struct {
	// Duration is the wall-clock time between the snapshots.
	Duration time.Duration
	// SchedLatency and GCPauses summarise the samples recorded in the window.
	SchedLatency, GCPauses LatencyStats
	// GCCPUFraction is the share of the process's CPU time spent on GC in the
	// window, 0 when no CPU time was accounted (the runtime updates its CPU
	// estimates at GC, so short windows without a GC read 0).
	GCCPUFraction float64
}

// Since returns the window from earlier to s.
func (s RuntimeSnapshot) Since(earlier RuntimeSnapshot) RuntimeWindow {
	w := RuntimeWindow{
		Duration:     s.At.Sub(earlier.At),
		SchedLatency: s.SchedLatency.Sub(earlier.SchedLatency).Latency(),
		GCPauses:     s.GCPauses.Sub(earlier.GCPauses).Latency(),
	}
	if total := s.TotalCPUSeconds - earlier.TotalCPUSeconds; total > 0 {
		w.GCCPUFraction = max(0, (s.GCCPUSeconds-earlier.GCCPUSeconds)/total)
	}
	return w
}
