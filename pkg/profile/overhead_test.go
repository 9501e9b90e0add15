package profile_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	cprofile "github.com/cachetune/cachetune/pkg/profile"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// BenchmarkOverhead measures what each hook costs a process that holds a
// synced informer of 10,000 dataset Pods (plain client-go, protobuf). Run it
// alone; it starts the local kube-apiserver and seeds the Pods first:
//
//	go test ./pkg/profile -run '^$' -bench Overhead -benchtime 30x -timeout 60m
//
// Hooks that run all the time (server, Pyroscope, spike watcher) are timed
// in operations of one second of wall clock, so cpu-ms/op is the CPU the
// process used per second and heap-MiB the live heap it gained; compare each
// with the "none" lines, measured first and last to show the drift. They run
// twice: with the informer idle (watch open, nothing changing) and busy (a
// worker deep-copying Pods from the lister, the same work every 10 ms),
// because the CPU profiler and the tracer cost in proportion to activity.
// Hooks that answer a request report CPU, time and allocation per request.
func BenchmarkOverhead(b *testing.B) {
	env := overheadEnv(b)

	type hook struct {
		name  string
		start func(ctx context.Context, b *testing.B) (stop func())
	}
	none := hook{"none", func(context.Context, *testing.B) func() { return func() {} }}
	hooks := []hook{
		none,
		{"server", func(ctx context.Context, b *testing.B) func() { return startHook(ctx, b) }},
		{"pyroscope", func(ctx context.Context, b *testing.B) func() {
			return startHook(ctx, b, cprofile.WithPyroscope(env.pyroscopeConfig(false)))
		}},
		{"pyroscope_forcegc", func(ctx context.Context, b *testing.B) func() {
			return startHook(ctx, b, cprofile.WithPyroscope(env.pyroscopeConfig(true)))
		}},
		{"spikes", func(ctx context.Context, b *testing.B) func() { return watchNoSpikes(ctx, b, true) }},
		{"spikes_trace", func(ctx context.Context, b *testing.B) func() { return watchNoSpikes(ctx, b, false) }},
		none,
	}
	for _, busy := range []bool{false, true} {
		load := "idle"
		if busy {
			load = "busy"
		}
		for _, h := range hooks {
			b.Run("continuous/"+load+"/"+h.name, func(b *testing.B) {
				stopWork := env.work(busy)
				defer stopWork()
				heap0 := liveHeap()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				stop := h.start(ctx, b)
				time.Sleep(2 * time.Second) // past start-up work
				b.ResetTimer()
				cpu0, t0 := cpuTime(), time.Now()
				for range b.N {
					time.Sleep(time.Second)
				}
				cpu, wall := cpuTime()-cpu0, time.Since(t0)
				b.StopTimer()
				heap1 := liveHeap() // while the hook still runs
				stop()
				b.ReportMetric(float64(cpu.Microseconds())/1e3/wall.Seconds(), "cpu-ms/op")
				b.ReportMetric((float64(heap1)-float64(heap0))/(1<<20), "heap-MiB")
			})
		}
	}

	requests := []struct{ name, path string }{
		{"metrics", "/metrics"},
		{"readyz", "/readyz"},
		{"heap", "/debug/pprof/heap"},
		{"goroutine", "/debug/pprof/goroutine"},
		{"delta_heap_1s", "/debug/pprof/delta_heap?seconds=1"},
		{"cpu_profile_1s", "/debug/pprof/profile?seconds=1"},
		{"fgprof_1s", "/debug/fgprof?seconds=1"},
		{"trace_1s", "/debug/pprof/trace?seconds=1"},
	}
	for _, r := range requests {
		b.Run("request/"+r.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			srv, err := cprofile.Start(ctx, cprofile.WithAddr("127.0.0.1:0"),
				cprofile.WithReadiness("pods", func(context.Context) error { return nil }))
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Shutdown(context.Background())
			url := "http://" + srv.Addr() + r.path
			var size int64
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				resp, err := http.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("GET %s: %d", r.path, resp.StatusCode)
				}
				size += n
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(size)/float64(b.N)/1024, "resp-KB/op")
		})
	}

	b.Run("request/spike_capture", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		captures := make(chan cprofile.Capture) // unbuffered: one capture per receive
		done := make(chan error, 1)
		dir := b.TempDir()
		go func() {
			done <- cprofile.WatchSpikes(ctx, cprofile.SpikeConfig{
				Dir: dir, HeapBytes: 1, Interval: 10 * time.Millisecond, Cooldown: time.Nanosecond, MaxFiles: 3,
				OnCapture: func(c cprofile.Capture) {
					select {
					case captures <- c:
					case <-ctx.Done():
					}
				},
			})
		}()
		<-captures // the first includes the flight recorder's start-up
		var size int64
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := cpuTime()
		for range b.N {
			c := <-captures
			for _, f := range c.Files {
				if fi, err := os.Stat(filepath.Join(dir, f)); err == nil {
					size += fi.Size()
				}
			}
			if len(c.Errors) > 0 {
				b.Fatalf("capture errors: %v", c.Errors)
			}
		}
		b.StopTimer()
		cpu := cpuTime() - cpu0
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
		b.ReportMetric(float64(size)/float64(b.N)/1024, "files-KB/op")
	})
}

var (
	overheadPods   = flag.Int("overhead.pods", 10000, "Pods in BenchmarkOverhead's informer")
	overheadCopies = flag.Int("overhead.copies", 20, "Pods the busy worker deep-copies every 10 ms")
)

// overheadState is the process BenchmarkOverhead measures: the local API
// server, the Pods and an informer holding them.
type overheadState struct {
	srv     *apiserver.Server
	cancel  context.CancelFunc
	pods    []*corev1.Pod
	factory informers.SharedInformerFactory
	sink    *httptest.Server
	err     error
}

var (
	overheadOnce sync.Once
	overhead     overheadState
)

func overheadEnv(b *testing.B) *overheadState {
	overheadOnce.Do(func() { overhead.err = overhead.setUp() })
	if overhead.err != nil {
		b.Fatal(overhead.err)
	}
	return &overhead
}

func (e *overheadState) setUp() error {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	srv, err := apiserver.Start(ctx, apiserver.Options{Progress: os.Stderr})
	if err != nil {
		return err
	}
	e.srv = srv
	const ns = "overhead"
	start := time.Now()
	if err := dataset.Seed(ctx, srv.Config, dataset.Spec{Name: "overhead", Namespace: ns, Pods: *overheadPods}); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	fmt.Fprintf(os.Stderr, "overhead: seeded %d Pods in %v\n", *overheadPods, time.Since(start).Round(time.Second))

	cs, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	pods := factory.Core().V1().Pods()
	// A handler, as a controller has; the Pods do not change during the run.
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	e.factory = factory
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer %v did not sync", typ)
		}
	}
	fmt.Fprintf(os.Stderr, "overhead: informer synced, live heap %.0f MiB\n", float64(liveHeap())/(1<<20))
	if e.pods, err = pods.Lister().List(labels.Everything()); err != nil || len(e.pods) == 0 {
		return fmt.Errorf("lister holds %d Pods: %v", len(e.pods), err)
	}
	// Pyroscope's uploads go to a sink in this process that reads and drops
	// them: the cost of a real server's ingest is not the process's.
	e.sink = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // a sink: what it reads is dropped either way
	}))
	return nil
}

// work starts the busy worker when busy is set: every 10 ms it deep-copies
// the next few Pods from the cache, as a controller reconciling would, so
// that the same work is done whatever the hooks cost. It returns its stop.
func (e *overheadState) work(busy bool) (stop func()) {
	if !busy {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; {
			select {
			case <-done:
				return
			case <-t.C:
			}
			for range *overheadCopies {
				copySink = e.pods[i%len(e.pods)].DeepCopy()
				i++
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

var copySink *corev1.Pod

func (e *overheadState) pyroscopeConfig(forceGC bool) cprofile.PyroscopeConfig {
	return cprofile.PyroscopeConfig{ApplicationName: "overhead", ServerAddress: e.sink.URL, ForceGC: forceGC}
}

func (e *overheadState) tearDown() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	if e.factory != nil {
		e.factory.Shutdown()
	}
	if e.sink != nil {
		e.sink.Close()
	}
	if e.srv != nil {
		if err := e.srv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "overhead: stop API server: %v\n", err)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	overhead.tearDown()
	os.Exit(code)
}

func startHook(ctx context.Context, b *testing.B, opts ...cprofile.Option) func() {
	srv, err := cprofile.Start(ctx, append([]cprofile.Option{cprofile.WithAddr("127.0.0.1:0")}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	return func() { srv.Shutdown(context.Background()) }
}

// watchNoSpikes runs the spike watcher with a threshold never reached, to
// price the watching alone (and the flight recorder unless noTrace).
func watchNoSpikes(ctx context.Context, b *testing.B, noTrace bool) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	dir := b.TempDir()
	go func() {
		done <- cprofile.WatchSpikes(ctx, cprofile.SpikeConfig{Dir: dir, HeapBytes: 1 << 50, DisableTrace: noTrace})
	}()
	return func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}
}

// cpuTime is the CPU time, user and system, the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// liveHeap collects garbage and returns the heap that is left.
func liveHeap() uint64 {
	runtime.GC()
	return cprofile.ReadRuntime().HeapObjectsBytes
}
