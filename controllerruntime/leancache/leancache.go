package leancache

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/cachetune/cachetune/pkg/leanstore"
)

// Options configure a Cache. The zero value is a cache that strips
// managedFields, as leanstore does by default, and reports its metrics on
// controller-runtime's registry.
type Options struct {
	// Leanstore are the leanstore options of every informer: stripping,
	// sharing, streaming lists, page size, backoff, heap bound, logger (by
	// default controller-runtime's, ctrl.Log named "leancache": what
	// ctrl.SetLogger sets, so leanstore's failures reach the operator's log;
	// a leanstore.WithLogger here replaces it). What an
	// informer caches is controller-runtime's to say (its cache.Options), so
	// leanstore's scope and naming options are replaced for each informer:
	// WithNamespace, WithLabelSelector, WithFieldSelector and
	// WithTweakListOptions by the informer's namespace and selectors, WithName
	// by Name, WithMetrics by Registerer. Give transforms to controller-runtime
	// (DefaultTransform, ByObject.Transform): it sets each informer's transform
	// itself, which replaces a leanstore.WithTransform. Prunes (WithPrune,
	// WithTypedPrune) are leanstore's and stay, as does WithEncodedStore,
	// which keeps the informers' objects encoded (see the package
	// documentation).
	Leanstore []leanstore.Option

	// Name prefixes every informer's name in logs, metrics and Status (default
	// "controller-runtime"). Two caches that report to one registry at the same
	// time need different names, or their series collide.
	Name string

	// Registerer receives leanstore's metrics (census, list paths, failures)
	// of the informers, from the cache's start, for each informer until it
	// stops; nil means controller-runtime's metrics.Registry, which a manager
	// serves on its metrics endpoint.
	Registerer prometheus.Registerer

	// DisableMetrics registers no metrics at all.
	DisableMetrics bool

	// DegradedAfter is how many failures in a row make an informer fail Check
	// (default 3).
	DegradedAfter int
}

// defaultLogger is the informers' logger unless the caller's Leanstore
// options say otherwise: controller-runtime's root logger, which a manager's
// own logging goes through, rather than leanstore's klog default.
var defaultLogger = ctrllog.Log.WithName("leancache")

// Cache makes the informers of one controller-runtime cache leanstore
// informers, and reports on them. Pass its NewCache to a manager:
//
//	lean := leancache.New(leancache.Options{Leanstore: []leanstore.Option{leanstore.WithStripLastApplied()}})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, NewCache: lean.NewCache})
//	err = mgr.AddReadyzCheck("informers", lean.Checker())
//
// A Cache serves one manager (one call of NewCache).
type Cache struct {
	opts Options

	register sync.Once

	mu        sync.Mutex
	used      bool
	informers map[string]*informer // by name: a re-created informer replaces the removed one
	order     []string
}

// New returns a Cache with opts.
func New(opts Options) *Cache {
	if opts.Name == "" {
		opts.Name = "controller-runtime"
	}
	if opts.Registerer == nil {
		opts.Registerer = metrics.Registry
	}
	if opts.DegradedAfter == 0 {
		opts.DegradedAfter = 3
	}
	return &Cache{opts: opts, informers: map[string]*informer{}}
}

// NewCache is a cache.NewCacheFunc (manager.Options.NewCache): it builds
// controller-runtime's own cache with opts, every informer of which is a
// leanstore informer. controller-runtime's options keep their meaning:
// DefaultNamespaces and per-object Namespaces, label and field selectors,
// transforms (run after leanstore's stripping), UnsafeDisableDeepCopy,
// SyncPeriod, watch error handlers, and indexes added with IndexField. Options
// leanstore cannot honour are an error here, or, for what only shows per
// informer, when the informer is created (GetInformer, a controller's Watch).
//
// It takes the place of a NewInformer hook of its own, and wraps the cache's
// HTTP client (sharing its transport) to learn each informer's exact scope;
// see the package documentation.
func (c *Cache) NewCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	c.mu.Lock()
	used := c.used
	c.used = true
	c.mu.Unlock()
	if used {
		return nil, errors.New("leancache: this Cache already serves a manager; make one Cache per manager")
	}

	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	// The defaults cache.New would apply, made here so that the informers built
	// below use the same ones.
	if opts.HTTPClient == nil {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("leancache: HTTP client from config: %w", err)
		}
		opts.HTTPClient = hc
	}
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	if opts.Mapper == nil {
		m, err := apiutil.NewDynamicRESTMapper(cfg, opts.HTTPClient)
		if err != nil {
			return nil, fmt.Errorf("leancache: REST mapper: %w", err)
		}
		opts.Mapper = m
	}
	opts.HTTPClient = wrapHTTPClient(opts.HTTPClient)

	b := &builder{
		owner:      c,
		config:     cfg,
		httpClient: opts.HTTPClient,
		scheme:     opts.Scheme,
		codecs:     serializer.NewCodecFactory(opts.Scheme),
		mapper:     opts.Mapper,
	}
	opts.NewInformer = b.newInformer
	inner, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return &runningCache{Cache: inner, owner: c}, nil
}

// checkOptions rejects the cache options leanstore cannot honour.
func checkOptions(opts cache.Options) error {
	if opts.NewInformer != nil {
		return errors.New("leancache: cache.Options.NewInformer is set: leancache provides the informers itself")
	}
	bookmarksOff := func(p *bool) bool { return p != nil && !*p }
	if bookmarksOff(opts.DefaultEnableWatchBookmarks) {
		return fmt.Errorf("leancache: DefaultEnableWatchBookmarks: %w", errNoBookmarks)
	}
	for ns, c := range opts.DefaultNamespaces {
		if bookmarksOff(c.EnableWatchBookmarks) {
			return fmt.Errorf("leancache: DefaultNamespaces[%q]: %w", ns, errNoBookmarks)
		}
	}
	for obj, by := range opts.ByObject {
		if bookmarksOff(by.EnableWatchBookmarks) {
			return fmt.Errorf("leancache: ByObject[%T]: %w", obj, errNoBookmarks)
		}
		for ns, c := range by.Namespaces {
			if bookmarksOff(c.EnableWatchBookmarks) {
				return fmt.Errorf("leancache: ByObject[%T].Namespaces[%q]: %w", obj, ns, errNoBookmarks)
			}
		}
	}
	return nil
}

// runningCache is controller-runtime's cache, marked as built by a Cache so
// that Of finds the Cache behind a manager's cache.
type runningCache struct {
	cache.Cache
	owner *Cache
}

// Start registers the Cache's metrics collector (once: an unchecked collector
// cannot be unregistered, and reports nothing once the informers stopped),
// then runs the cache until ctx ends.
func (r *runningCache) Start(ctx context.Context) error {
	if !r.owner.opts.DisableMetrics {
		var err error
		r.owner.register.Do(func() { err = r.owner.opts.Registerer.Register(collector{owner: r.owner}) })
		if err != nil {
			return fmt.Errorf("leancache: register metrics: %w", err)
		}
	}
	return r.Cache.Start(ctx)
}

// NeedLeaderElection is false, as for controller-runtime's own cache: a cache
// added to a manager as a runnable runs on every replica.
func (r *runningCache) NeedLeaderElection() bool { return false }

// Of returns the Cache behind a manager's cache (mgr.GetCache()), or nil when
// it was not made by a Cache's NewCache.
func Of(c cache.Cache) *Cache {
	if r, ok := c.(*runningCache); ok {
		return r.owner
	}
	return nil
}
