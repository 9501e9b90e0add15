package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/predicate"
	"github.com/cachetune/cachetune/pkg/profile"
	"github.com/cachetune/cachetune/pkg/reconcile"
	"github.com/cachetune/cachetune/pkg/retry"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// config is what run needs; main fills it from flags.
type config struct {
	rest      *rest.Config
	namespace string
	seed      int    // Widgets to create first (with their CRD); 0 for none
	workers   int    // reconciles at once
	addr      string // pprof, metrics and health
	demo      bool   // change things after the start, to show each trigger
	logger    *slog.Logger
}

var widgetGK = schema.GroupKind{Group: dataset.WidgetGVR.Group, Kind: "Widget"}

// run seeds (if asked), starts the informers, the profiling server and the
// reconcile loop, and returns when ctx ends and everything has stopped.
func run(ctx context.Context, cfg config) error {
	log := cfg.logger
	cs, dyn, err := clients(cfg.rest)
	if err != nil {
		return err
	}
	if cfg.seed > 0 {
		log.Info("seeding widgets", "namespace", cfg.namespace, "widgets", cfg.seed)
		spec := dataset.Spec{Name: "widget-example", Namespace: cfg.namespace, Widgets: cfg.seed}
		if err := dataset.Seed(ctx, cfg.rest, spec); err != nil {
			return fmt.Errorf("seed widgets: %w", err)
		}
	}

	// Informers that keep only what the controller reads: managedFields are
	// stripped, and the ConfigMap cache holds this controller's ConfigMaps
	// alone.
	reg := prometheus.NewRegistry()
	// The library logs through logr, as client-go does; this program's slog
	// handler is bridged once, here at the edge.
	lr := logr.FromSlogHandler(log.Handler())
	klog := leanstore.WithLogger(lr)
	widgets := leanstore.NewDynamicSharedInformerFactory(dyn, 0,
		leanstore.WithNamespace(cfg.namespace), leanstore.WithName("widgets"), leanstore.WithMetrics(reg), klog)
	children := leanstore.NewSharedInformerFactory(cs, 0,
		leanstore.WithNamespace(cfg.namespace), leanstore.WithLabelSelector(managedByLabel+"="+managedBy),
		leanstore.WithName("widget-parts"), leanstore.WithMetrics(reg), klog)
	widgetInformer := widgets.ForResource(dataset.WidgetGVR)
	partsInformer := children.Core().V1().ConfigMaps()

	c := newController(widgetInformer.Lister(), partsInformer.Lister(), cs, dyn)
	trigger := reconcile.DefaultPredicate() // spec changes, not status writes
	loop := reconcile.New("widgets", c.reconcile,
		reconcile.WithWorkers(cfg.workers),
		reconcile.WithLogger(lr),
		reconcile.WithMetrics(reg),
		reconcile.WithOnPermanent(reconcile.ConditionHook(dyn, dataset.WidgetGVR, "Ready")),
	)
	if err := loop.Watch(widgetInformer.Informer(), trigger); err != nil {
		return err
	}
	if err := loop.WatchRelated(partsInformer.Informer(), reconcile.ByOwner(widgetGK)); err != nil {
		return err
	}
	if err := reg.Register(predicate.NewCollector(trigger)); err != nil {
		return err
	}

	srv, err := profile.Start(ctx,
		profile.WithAddr(cfg.addr),
		profile.WithMetrics(reg),
		profile.WithReadiness("informers", func(ctx context.Context) error {
			return errors.Join(widgets.Check(ctx), children.Check(ctx))
		}),
		profile.WithLogger(lr),
	)
	if err != nil {
		return err
	}
	defer func() { _ = srv.Shutdown(context.Background()) }() // exiting: nothing left to report it to
	log.Info("serving pprof, metrics and health", "url", "http://"+srv.Addr(),
		"try", "curl -s http://"+srv.Addr()+"/metrics | grep cachetune_reconcile")

	widgets.Start(ctx.Done())
	children.Start(ctx.Done())
	defer children.Shutdown()
	defer widgets.Shutdown()

	var wg sync.WaitGroup
	if cfg.demo {
		wg.Go(func() { demo(ctx, log, cs, dyn, cfg.namespace, func() bool { return widgets.Check(ctx) == nil }) })
	}
	err = loop.Run(ctx)
	wg.Wait()
	s, p := loop.Stats(), trigger.Stats()
	log.Info("stopped", "parked", s.Parked, "inBackoff", s.InBackoff,
		"eventsPassed", p.Passed(), "eventsFiltered", p.Filtered())
	return err
}

// clients returns the typed and dynamic clients of the controller, with
// client-layer retries for 429, 503 and 504; other errors reach the loop.
func clients(cfg *rest.Config) (kubernetes.Interface, dynamic.Interface, error) {
	rc := rest.CopyConfig(cfg)
	if err := retry.Wrap(rc); err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	return cs, dyn, nil
}
