package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	demov1 "github.com/cachetune/cachetune/controllerruntime/examples/appconfig-operator/api/v1"
	"github.com/cachetune/cachetune/controllerruntime/leancache"
	"github.com/cachetune/cachetune/controllerruntime/profiling"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/profile"
)

// NewScheme is client-go's types plus this operator's API.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := demov1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewManager returns the operator's manager, its reconciler registered, with
// leanstore's informers under its cache: managedFields and kubectl's
// last-applied annotation stripped from every cached object, and only the
// ConfigMaps this operator renders cached. Its metrics server also serves
// pkg/profile's endpoints (/debug/pprof/, /debug/fgprof). opts may set the
// metrics and probe addresses; Scheme, NewCache and Cache are the operator's.
func NewManager(ctx context.Context, cfg *rest.Config, opts ctrl.Options) (ctrl.Manager, *leancache.Cache, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, nil, err
	}
	lean := leancache.New(leancache.Options{
		Name:      "appconfig",
		Leanstore: []leanstore.Option{leanstore.WithStripLastApplied()},
	})
	opts.Scheme = scheme
	opts.NewCache = lean.NewCache
	opts.Cache = cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{ManagedByLabel: ManagedBy})},
		},
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("new manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, err
	}
	if err := mgr.AddReadyzCheck("informers", lean.Checker()); err != nil {
		return nil, nil, err
	}
	// Profiles (pprof, fgprof, heap growth) on the metrics server, behind
	// whatever filter guards /metrics.
	profiles, err := profile.NewHandler()
	if err != nil {
		return nil, nil, err
	}
	if err := profiling.AddToManager(mgr, profiles); err != nil {
		return nil, nil, fmt.Errorf("serve profiles on the metrics server: %w", err)
	}
	r := &AppConfigReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return nil, nil, err
	}
	return mgr, lean, nil
}
