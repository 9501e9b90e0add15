package bench_test

import (
	"fmt"
	"time"

	"github.com/cachetune/cachetune/internal/bench"
)

// Select picks modes by name or glob, as cachebench run --modes does.
func ExampleSelect() {
	modes, err := bench.Select("client-go/metadata*/stream")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range modes {
		fmt.Printf("%s: %s (streaming %v)\n", m.Name, m.Title, m.Streaming)
	}
	// Output:
	// client-go/metadata/stream: client-go metadata-only, streaming (streaming true)
	// client-go/metadata-strip-mf/stream: client-go metadata-only, strip managedFields, streaming (streaming true)
}

// Downsample keeps a short spike visible in a long series.
func ExampleDownsample() {
	var samples []bench.MemSample
	for i := range 1000 {
		heap := uint64(100)
		if i == 501 {
			heap = 900 // a 1 ms spike
		}
		samples = append(samples, bench.MemSample{T: time.Duration(i) * time.Millisecond, Heap: heap})
	}
	var peak uint64
	points := bench.Downsample(samples, 50)
	for _, s := range points {
		peak = max(peak, s.Heap)
	}
	fmt.Println(len(points), "points, peak", peak)
	// Output: 50 points, peak 900
}
