package bench

import (
	"math"
	"slices"
	"time"

	"github.com/cachetune/cachetune/pkg/profile"
)

// LatencyStats summarises latencies in milliseconds.
type LatencyStats struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50Ms"`
	P99   float64 `json:"p99Ms"`
	Max   float64 `json:"maxMs"`
}

// ProbeStats summarises the probe's lateness in a window.
type ProbeStats = LatencyStats

// probeStats computes exact nearest-rank quantiles of raw samples: the probe
// keeps every wake-up, so nothing needs estimating from buckets.
func probeStats(late []time.Duration) LatencyStats {
	if len(late) == 0 {
		return LatencyStats{}
	}
	slices.Sort(late)
	return LatencyStats{
		Count: len(late),
		P50:   ms(nearestRank(late, 0.50)),
		P99:   ms(nearestRank(late, 0.99)),
		Max:   ms(late[len(late)-1]),
	}
}

// nearestRank returns the q-quantile of sorted values: the smallest value with
// at least q of the values at or below it.
func nearestRank(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fromProfile converts the runtime's histogram summary.
func fromProfile(l profile.LatencyStats) LatencyStats {
	return LatencyStats{Count: int(l.Count), P50: ms(l.P50), P99: ms(l.P99), Max: ms(l.Max)}
}

// RuntimeStats is what the Go runtime recorded in a window.
type RuntimeStats struct {
	Seconds float64 `json:"seconds"`
	// Sched is /sched/latencies:seconds: how long goroutines waited to run.
	Sched LatencyStats `json:"sched"`
	// GCPauses is /sched/pauses/total/gc:seconds.
	GCPauses LatencyStats `json:"gcPauses"`
	// GCCPUFraction is GC CPU time over the CPU time available to the
	// process (GOMAXPROCS times the wall time), as in runtime.MemStats. The
	// runtime updates its CPU estimates at each GC, so a window without a GC
	// reads 0 and the edges of a window are as fuzzy as the GC cycles.
	GCCPUFraction float64 `json:"gcCPUFraction"`
	// GCCPUSeconds and AvailableCPUSeconds are the terms of that fraction, so
	// that windows can be added up.
	GCCPUSeconds        float64 `json:"gcCPUSeconds"`
	AvailableCPUSeconds float64 `json:"availableCPUSeconds"`
}

func runtimeStats(from, to profile.RuntimeSnapshot) RuntimeStats {
	w := to.Since(from)
	return RuntimeStats{
		Seconds:             w.Duration.Seconds(),
		Sched:               fromProfile(w.SchedLatency),
		GCPauses:            fromProfile(w.GCPauses),
		GCCPUFraction:       w.GCCPUFraction,
		GCCPUSeconds:        max(0, to.GCCPUSeconds-from.GCCPUSeconds),
		AvailableCPUSeconds: max(0, to.TotalCPUSeconds-from.TotalCPUSeconds),
	}
}
