// Package profile turns on profiling for a process that runs informers, so
// that it can see where its memory and time go: on demand over HTTP,
// continuously in Pyroscope, and automatically at the moment a spike
// happens.
//
// The guide that uses it: docs/profiling.md.
//
// # Serving the endpoints
//
// Start serves, on its own mux and by default on 127.0.0.1:6060, the
// standard /debug/pprof/ profiles, fgprof's wall-clock profile at
// /debug/fgprof, a heap-growth profile at /debug/pprof/delta_heap, /metrics
// for Prometheus with the Go scheduler-latency and GC-pause histograms, and
// /healthz and /readyz:
//
//	srv, err := profile.Start(ctx,
//		profile.WithAddr(":6060"),
//		profile.WithReadiness("informers", informersSynced),
//	)
//	if err != nil {
//		return err
//	}
//	defer srv.Shutdown(context.Background())
//
// Then, from a workstation (kubectl port-forward pod/my-operator 6060):
//
//	go tool pprof http://localhost:6060/debug/pprof/heap
//	go tool pprof http://localhost:6060/debug/fgprof?seconds=10
//	go tool pprof http://localhost:6060/debug/pprof/delta_heap?seconds=60
//
// # On a server the program already has
//
// NewHandler serves the same endpoints (with /metrics only when WithMetrics
// asks for it) as an http.Handler, to mount on a mux of the program's own or
// on controller-runtime's metrics server (the controllerruntime module's
// profiling package does that):
//
//	h, err := profile.NewHandler(profile.WithReadiness("informers", informersSynced))
//	if err != nil {
//		return err
//	}
//	defer h.Close()
//	for _, p := range h.Paths() {
//		mux.Handle(p, h)
//	}
//
// # Continuous profiling and labels
//
// WithPyroscope streams CPU, heap and goroutine profiles to a Pyroscope
// server. Run each informer inside Do and its goroutines carry pprof labels
// informer and resource, so a CPU or goroutine profile, local or in
// Pyroscope, splits by informer.
//
// # Spikes
//
// WatchSpikes samples runtime/metrics and, when the heap crosses a threshold
// or grows past a ratio of its baseline, or scheduler latency climbs, writes
// a heap profile, a goroutine profile and a flight-recorder execution trace
// into a directory, indexed in index.json with the reason. Attribute then
// splits what a spike added to the heap into decode, store, transform and
// watch.
//
// # Runtime windows
//
// ReadRuntime and RuntimeSnapshot.Since measure what the runtime did during
// a piece of work: scheduler-latency and GC-pause quantiles, GC CPU share.
//
//	before := profile.ReadRuntime()
//	// ... a re-list, a benchmark phase ...
//	w := profile.ReadRuntime().Since(before)
//	fmt.Println(w.SchedLatency.P99, w.GCPauses.Max, w.GCCPUFraction)
//
// # A full program
//
// A controller with a Pod informer, everything on:
//
//	package main
//
//	import (
//		"context"
//		"errors"
//		"log"
//		"os"
//		"os/signal"
//		"syscall"
//
//		"k8s.io/client-go/informers"
//		"k8s.io/client-go/kubernetes"
//		"k8s.io/client-go/tools/clientcmd"
//
//		"github.com/cachetune/cachetune/pkg/profile"
//	)
//
//	func main() {
//		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//		defer stop()
//
//		cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
//		if err != nil {
//			log.Fatal(err)
//		}
//		cs := kubernetes.NewForConfigOrDie(cfg)
//		factory := informers.NewSharedInformerFactory(cs, 0)
//		pods := factory.Core().V1().Pods().Informer()
//
//		srv, err := profile.Start(ctx,
//			profile.WithAddr(":6060"),
//			profile.WithReadiness("pods", func(context.Context) error {
//				if !pods.HasSynced() {
//					return errors.New("pod informer not synced")
//				}
//				return nil
//			}),
//			profile.WithPyroscope(profile.PyroscopeConfig{
//				ApplicationName: "pod-watcher",
//				ServerAddress:   "http://pyroscope.monitoring:4040",
//				Tags:            map[string]string{"pod": os.Getenv("POD_NAME")},
//			}),
//		)
//		if err != nil {
//			log.Fatal(err)
//		}
//		defer srv.Shutdown(context.Background())
//
//		go func() {
//			if err := profile.WatchSpikes(ctx, profile.SpikeConfig{
//				Dir:       "/var/run/spikes",
//				HeapBytes: 800 << 20, // 80% of a 1 GiB limit
//			}); err != nil {
//				log.Print(err)
//			}
//		}()
//
//		// The informer's reflector, decoding and handlers run on goroutines
//		// started here, so all of them carry informer=pods.
//		profile.Do(ctx, "pods", "pods", func(ctx context.Context) {
//			go pods.Run(ctx.Done())
//		})
//		<-ctx.Done()
//	}
//
// docs/profiling.md in the repository covers each endpoint, Pyroscope's
// set-up and cost, spike capture and the measured overhead of every hook.
package profile
