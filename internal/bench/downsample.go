package bench

import "time"

// Downsample reduces samples to at most n points for a chart, keeping the
// shape that matters: each output point is the highest-heap sample of an equal
// slice of time, carrying the highest RSS of that slice, so a short spike
// survives. The first and last samples are always kept. Samples must be in time
// order.
func Downsample(samples []MemSample, n int) []MemSample {
	if n < 3 || len(samples) <= n {
		return append([]MemSample(nil), samples...)
	}
	first, last := samples[0], samples[len(samples)-1]
	inner := samples[1 : len(samples)-1]
	buckets := n - 2 // the first and last points are kept apart
	span := float64(last.T - first.T)
	out := make([]MemSample, 0, n)
	out = append(out, first)
	i := 0
	for b := range buckets {
		end := first.T + time.Duration(span*float64(b+1)/float64(buckets))
		var best MemSample
		var rss uint64
		found := false
		for ; i < len(inner) && (inner[i].T < end || b == buckets-1); i++ {
			if s := inner[i]; !found || s.Heap > best.Heap {
				best = s
			}
			rss = max(rss, inner[i].RSS)
			found = true
		}
		if found {
			best.RSS = rss
			out = append(out, best)
		}
	}
	return append(out, last)
}
