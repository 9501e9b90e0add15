// Command appconfig-operator is a kubebuilder-style operator whose
// controller-runtime cache is made of leanstore informers (package leancache):
// its own CRD Go type decoded from JSON, the ConfigMaps it renders (narrowed by
// a label selector), and the Secrets it depends on watched for their metadata
// only, each stripped of managedFields and kubectl's last-applied annotation.
//
// An AppConfig (demo.cachetune.dev/v1) names some data and a Secret; the
// operator renders a ConfigMap of that data, stamped with the Secret's
// resourceVersion, once the Secret exists.
//
// One command runs it on a real kube-apiserver started locally, installs the
// CRD and shows an AppConfig waiting for its Secret, becoming Ready, and
// following a change of the Secret:
//
//	make example-cr   # go run ./examples/appconfig-operator --local, in controllerruntime/
//
// or against a cluster that has the CRD (config/crd/bases):
//
//	go run ./examples/appconfig-operator --kubeconfig ~/.kube/config
//
// The manager serves metrics (leanstore's among them) and pkg/profile's
// profiles on --metrics-bind-address:
//
//	go tool pprof http://127.0.0.1:8080/debug/pprof/heap
//	go tool pprof 'http://127.0.0.1:8080/debug/fgprof?seconds=10'
//
// and /readyz, which fails while an informer is not synced or is failing, on
// --health-probe-bind-address. Stop it with Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cachetune/cachetune/controllerruntime/examples/appconfig-operator/internal/controller"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "appconfig-operator:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	local := flag.Bool("local", false, "start a local kube-apiserver, install the CRD and run a short demonstration")
	namespace := flag.String("namespace", "appconfig-demo", "with --local: namespace of the demonstration")
	runFor := flag.Duration("for", 0, "stop after this long (0: run until interrupted)")
	metricsAddr := flag.String("metrics-bind-address", "127.0.0.1:8080", "address of the metrics endpoint (0 to disable)")
	probeAddr := flag.String("health-probe-bind-address", "127.0.0.1:8081", "address of /healthz and /readyz")
	zapOpts := zap.Options{Development: true}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("appconfig-operator")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *runFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *runFor)
		defer cancel()
	}

	var cfg *rest.Config
	if *local {
		log.Info("starting a local kube-apiserver (the first run builds it: about 8 minutes)")
		srv, err := apiserver.Start(ctx, apiserver.Options{Progress: os.Stderr})
		if err != nil {
			return err
		}
		defer func() {
			if err := srv.Stop(); err != nil {
				log.Error(err, "stop the local kube-apiserver")
			}
		}()
		log.Info("kube-apiserver ready", "kubeconfig", srv.Kubeconfig, "startup", srv.StartupTime)
		cfg = srv.Config
		if err := installCRDs(cfg); err != nil {
			return err
		}
	} else {
		var err error
		if cfg, err = ctrl.GetConfig(); err != nil {
			return fmt.Errorf("load kubeconfig: %w", err)
		}
	}

	mgr, lean, err := controller.NewManager(ctx, cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress: *probeAddr,
	})
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if *local {
		if err := demo(ctx, mgr, lean, *namespace); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			stop()
			if mgrErr := <-done; mgrErr != nil {
				log.Error(mgrErr, "manager")
			}
			return err
		}
	}
	if err := <-done; err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// shortly bounds one step of the demonstration.
const shortly = 30 * time.Second
