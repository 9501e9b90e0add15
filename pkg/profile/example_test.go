package profile_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"runtime/pprof"
	"time"

	"github.com/google/pprof/profile"

	cprofile "github.com/cachetune/cachetune/pkg/profile"
)

// Serve the profiling, metrics and health endpoints next to a controller,
// with a readiness check; port 0 picks a free port.
func ExampleStart() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	synced := func(context.Context) error { return nil } // e.g. all informers HasSynced
	srv, err := cprofile.Start(ctx,
		cprofile.WithAddr("127.0.0.1:0"),
		cprofile.WithReadiness("informers", synced),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(context.Background())

	resp, err := http.Get("http://" + srv.Addr() + "/readyz")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.StatusCode, "\n", string(body))
	// Output:
	// 200
	// [+]informers ok
	// ok
}

// Stream profiles to Pyroscope, tagged with where the process runs.
func ExampleWithPyroscope() {
	srv, err := cprofile.Start(context.Background(),
		cprofile.WithAddr(":6060"),
		cprofile.WithPyroscope(cprofile.PyroscopeConfig{
			ApplicationName: "widget-operator",
			ServerAddress:   "http://pyroscope.monitoring:4040",
			Tags:            map[string]string{"namespace": os.Getenv("POD_NAMESPACE"), "pod": os.Getenv("POD_NAME")},
		}),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
}

// Label an informer's work, so that CPU and goroutine profiles split by
// informer: goroutines started inside Do inherit the labels.
func ExampleDo() {
	cprofile.Do(context.Background(), "pods", "pods", func(ctx context.Context) {
		informer, _ := pprof.Label(ctx, cprofile.LabelInformer)
		resource, _ := pprof.Label(ctx, cprofile.LabelResource)
		fmt.Println(informer, resource)
		// go podInformer.Run(ctx.Done())
	})
	// Output: pods pods
}

// Write heap, goroutine and trace snapshots when the heap passes 800 MiB or
// triples, or scheduler latency passes 10 ms.
func ExampleWatchSpikes() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		err := cprofile.WatchSpikes(ctx, cprofile.SpikeConfig{
			Dir:             "/var/run/spikes",
			HeapBytes:       800 << 20,
			HeapGrowthRatio: 3,
			SchedP99:        10 * time.Millisecond,
			OnCapture: func(c cprofile.Capture) {
				log.Printf("spike: %s %.0f >= %.0f, wrote %v", c.Trigger, c.Value, c.Threshold, c.Files)
			},
		})
		if err != nil {
			log.Print(err)
		}
	}()
}

// Summarise a known scheduler-latency window.
func ExampleHistogram_Latency() {
	// 90 wake-ups within 100 µs, 10 between 1 and 10 ms.
	h := cprofile.Histogram{
		Counts:  []uint64{90, 0, 10},
		Buckets: []float64{0, 100e-6, 1e-3, 10e-3},
	}
	l := h.Latency()
	fmt.Println(l.Count, l.P50, l.P99, l.Max)
	// Output: 100 55.555µs 9.1ms 10ms
}

// Measure what the runtime did during a piece of work.
func ExampleRuntimeSnapshot_Since() {
	before := cprofile.ReadRuntime()
	time.Sleep(10 * time.Millisecond) // the work: a re-list, a benchmark phase
	w := cprofile.ReadRuntime().Since(before)
	fmt.Println(w.Duration >= 10*time.Millisecond, w.SchedLatency.P99 <= w.SchedLatency.Max)
	// Output: true true
}

// Split what a spike added to the heap into decode, store, transform and
// watch, from two heap profiles (here: one taken in steady state, one
// written by WatchSpikes).
func ExampleAttribute() {
	read := func(path string) *profile.Profile {
		b, err := os.ReadFile(path)
		if err != nil {
			log.Fatal(err)
		}
		p, err := profile.Parse(bytes.NewReader(b))
		if err != nil {
			log.Fatal(err)
		}
		return p
	}
	before := read("steady-heap.pb.gz")
	after := read("/var/run/spikes/spike-20260102T150405.000Z-heap.pb.gz")
	for _, b := range cprofile.Attribute(before, after, cprofile.DefaultBuckets()).Buckets {
		fmt.Printf("%-10s %8.1f MiB\n", b.Name, float64(b.Bytes)/(1<<20))
	}
}
