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
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/dataset"
	cprofile "github.com/cachetune/cachetune/pkg/profile"
	"github.com/cachetune/cachetune/pkg/testapiserver"
)

// BenchmarkOverhead measures what each hook costs a process that holds a
// synced informer of dataset Pods (plain client-go, protobuf) while a few
// of them change every second. Run it alone; it starts the local
// kube-apiserver and seeds the Pods first:
//
//	go test -run '^$' -bench Overhead -benchtime 30x -timeout 60m ./pkg/profile
//
// Hooks that run all the time (server, Pyroscope, spike watcher) are timed
// in operations of one second of wall clock: cpu-ms/op is then the CPU they
// add per second, compared with the "idle" line, and heap-MiB the live heap
// they add. Hooks that answer a request report CPU, time and allocation
// per request, with the Pod updates paused so that B/op is the request's.
func BenchmarkOverhead(b *testing.B) {
	env := overheadEnv(b)

	continuous := []struct {
		name  string
		start func(ctx context.Context, b *testing.B) (stop func())
	}{
		{"idle", func(context.Context, *testing.B) func() { return func() {} }},
		{"server", func(ctx context.Context, b *testing.B) func() { return startHook(ctx, b) }},
		{"pyroscope", func(ctx context.Context, b *testing.B) func() {
			return startHook(ctx, b, cprofile.WithPyroscope(env.pyroscopeConfig(false)))
		}},
		{"pyroscope_forcegc", func(ctx context.Context, b *testing.B) func() {
			return startHook(ctx, b, cprofile.WithPyroscope(env.pyroscopeConfig(true)))
		}},
		{"spikes", func(ctx context.Context, b *testing.B) func() {
			return watchNoSpikes(ctx, b, true)
		}},
		{"spikes_trace", func(ctx context.Context, b *testing.B) func() {
			return watchNoSpikes(ctx, b, false)
		}},
	}
	for _, c := range continuous {
		b.Run("continuous/"+c.name, func(b *testing.B) {
			env.setChurn(true)
			heap0 := liveHeap()
			ctx, cancel := context.WithCancel(context.Background())
			stop := c.start(ctx, b)
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
			cancel()
			b.ReportMetric(float64(cpu.Microseconds())/1e3/wall.Seconds(), "cpu-ms/op")
			b.ReportMetric((float64(heap1)-float64(heap0))/(1<<20), "heap-MiB")
		})
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
			env.setChurn(false)
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
		env.setChurn(false)
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
	overheadPods  = flag.Int("overhead.pods", 10000, "Pods in BenchmarkOverhead's informer")
	overheadChurn = flag.Int("overhead.churn", 20, "Pod updates per second during BenchmarkOverhead's continuous hooks")
)

// overheadState is the process BenchmarkOverhead measures: the local API
// server, the Pods, an informer holding them, and a goroutine updating some.
type overheadState struct {
	srv     *testapiserver.Server
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	churnOn atomic.Bool
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
	srv, err := testapiserver.Start(ctx, testapiserver.Options{Progress: os.Stderr})
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
	var events atomic.Int64
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, _ any) { events.Add(1) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer %v did not sync", typ)
		}
	}
	fmt.Fprintf(os.Stderr, "overhead: informer synced, live heap %.0f MiB\n", float64(liveHeap())/(1<<20))
	all, err := pods.Lister().List(labels.Everything())
	if err != nil || len(all) == 0 {
		return fmt.Errorf("lister holds %d Pods: %v", len(all), err)
	}
	names := make([]string, len(all))
	for i, p := range all {
		names[i] = p.Name
	}

	// Churn: a label bump on one Pod after another, a few per second, as
	// a quiet cluster would produce.
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		t := time.NewTicker(time.Second / time.Duration(max(1, *overheadChurn)))
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if !e.churnOn.Load() {
				continue
			}
			name := names[i%len(names)]
			patch := fmt.Sprintf(`{"metadata":{"labels":{"cachetune.dev/tick":"%d"}}}`, i)
			_, _ = cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		}
	}()
	// Pyroscope's uploads go to a sink in this process that reads and drops
	// them: the cost of a real server's ingest is not the process's.
	e.sink = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	return nil
}

func (e *overheadState) setChurn(on bool) { e.churnOn.Store(on) }

func (e *overheadState) pyroscopeConfig(forceGC bool) cprofile.PyroscopeConfig {
	return cprofile.PyroscopeConfig{ApplicationName: "overhead", ServerAddress: e.sink.URL, ForceGC: forceGC}
}

func (e *overheadState) tearDown() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	e.wg.Wait()
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
