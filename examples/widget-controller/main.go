// Command widget-controller is a small, complete controller built on
// cachetune: leanstore informers (managedFields stripped, a ConfigMap cache
// narrowed by label), the reconcile loop (bounded workers, backoff, parked
// permanent errors recorded on status, traces and metrics) and the profile
// server (pprof, metrics, health).
//
// It assembles Widgets (bench.cachetune.dev/v1): each valid Widget gets a
// "<name>-parts" ConfigMap and condition Ready=True; an invalid one (size 0,
// an unknown colour) gets Ready=False with reason InvalidSpec and waits for
// its spec to change.
//
// One command runs it against a real kube-apiserver started locally, with
// five seeded Widgets and a short demonstration of each trigger:
//
//	go run ./examples/widget-controller --local
//
// or against a cluster that has the Widget CRD:
//
//	go run ./examples/widget-controller --kubeconfig ~/.kube/config --namespace widgets
//
// While it runs, http://127.0.0.1:6060 serves /metrics, /readyz and
// /debug/pprof/. Stop it with Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "widget-controller:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	local := flag.Bool("local", false, "start a local kube-apiserver, seed Widgets and run a short demonstration")
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster to run against (without --local)")
	namespace := flag.String("namespace", "widget-example", "namespace of the Widgets")
	seed := flag.Int("seed", -1, "Widgets to create first, with the CRD (default 5 with --local, else 0)")
	workers := flag.Int("workers", 2, "reconciles at once")
	addr := flag.String("addr", "127.0.0.1:6060", "address for pprof, metrics and health")
	demo := flag.Bool("demo", true, "with --local: change Widgets after the start to show each trigger")
	jsonLogs := flag.Bool("json", false, "log JSON instead of text")
	debug := flag.Bool("v", false, "debug logs: dropped events, loop internals")
	flag.Parse()

	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	var handler slog.Handler = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})
	if *jsonLogs {
		handler = slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})
	}
	log := slog.New(handler)
	slog.SetDefault(log)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg := config{namespace: *namespace, seed: *seed, workers: *workers, addr: *addr, logger: log}
	if *local {
		log.Info("starting a local kube-apiserver (the first run builds it: about 8 minutes)")
		srv, err := apiserver.Start(ctx, apiserver.Options{Progress: os.Stderr})
		if err != nil {
			return err
		}
		defer func() {
			if err := srv.Stop(); err != nil {
				log.Warn("stopping the local kube-apiserver", "error", err)
			}
		}()
		log.Info("kube-apiserver ready", "host", srv.Host, "kubeconfig", srv.Kubeconfig, "startup", srv.StartupTime)
		cfg.rest, cfg.demo = srv.Config, *demo
		if cfg.seed < 0 {
			cfg.seed = 5
		}
	} else {
		rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
		if err != nil {
			return fmt.Errorf("load kubeconfig: %w", err)
		}
		cfg.rest = rc
	}
	cfg.seed = max(cfg.seed, 0)
	return run(ctx, cfg)
}
