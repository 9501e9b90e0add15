package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cachetune/cachetune/controllerruntime/leancache"
	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/pkg/leanstore"
)

// flavour is how a mode builds its manager's cache: with controller-runtime's
// own informers and cache options, or with leancache's informers.
type flavour struct {
	// options changes controller-runtime's cache options (nil: the defaults).
	options func(*cache.Options)
	// lean, when set, makes the cache leancache's, with these leanstore
	// options beside the list path the mode asks for.
	lean []leanstore.Option
}

// flavours are the modes internal/bench registers for this program
// (modes_controllerruntime.go), by name.
var flavours = map[string]flavour{
	"controller-runtime/default/stream": {},
	"controller-runtime/strip-mf/stream": {options: func(o *cache.Options) {
		o.DefaultTransform = cache.TransformStripManagedFields()
	}},
	"controller-runtime/no-deepcopy/stream": {options: func(o *cache.Options) {
		o.DefaultUnsafeDisableDeepCopy = ptr.To(true)
	}},
	"controller-runtime/leancache-strip-mf-la/stream": {lean: []leanstore.Option{leanstore.WithStripLastApplied()}},
	"controller-runtime/leancache-lean/stream":        {lean: []leanstore.Option{leanstore.WithStripLastApplied(), leanstore.WithSharing(true)}},
}

// implementModes gives every mode of this program its Start and Dynamic, and
// fails when the registry and this program disagree on the modes.
func implementModes() error {
	var registered []string
	for _, m := range bench.Modes() {
		if m.Program == bench.ControllerRuntime {
			registered = append(registered, m.Name)
		}
	}
	for name := range flavours {
		if !slices.Contains(registered, name) {
			return fmt.Errorf("mode %s is implemented here but not registered for %s", name, bench.ControllerRuntime.Name)
		}
	}
	for _, name := range registered {
		f, ok := flavours[name]
		if !ok {
			return fmt.Errorf("mode %s is registered for %s but not implemented", name, bench.ControllerRuntime.Name)
		}
		if err := bench.Implement(name, f.start(false), f.start(true)); err != nil {
			return err
		}
	}
	return nil
}

// start returns the mode's constructor: typed objects, or unstructured ones
// for a resource with no Go type (a custom resource beside built-in ones).
func (f flavour) start(unstructured bool) func(context.Context, bench.Env) (bench.Cache, error) {
	return func(ctx context.Context, env bench.Env) (bench.Cache, error) {
		return f.startManager(ctx, env, unstructured)
	}
}

// startManager starts a Manager whose cache holds env's resource, read
// through the manager's client as a reconciler reads it. Each resource gets a
// manager of its own, scoped as the other modes scope their informers (a
// manager's DefaultNamespaces are fixed when it is made, and a cluster-scoped
// resource has none), so a process caching several resources holds several
// managers.
func (f flavour) startManager(ctx context.Context, env bench.Env, unstructured bool) (bench.Cache, error) {
	// client-go's scheme is built when the process starts: its heap is in the
	// measurement's baseline, as a kubebuilder operator's scheme would be.
	scheme := clientgoscheme.Scheme
	opts, lean, rec := f.managerOptions(env, scheme)
	mgr, err := ctrl.NewManager(env.Config, opts)
	if err != nil {
		return bench.Cache{}, fmt.Errorf("manager for %s: %w", env.Resource.Resource, err)
	}
	gvk, err := mgr.GetRESTMapper().KindFor(env.Resource)
	if err != nil {
		return bench.Cache{}, fmt.Errorf("kind of %s: %w", env.Resource.Resource, err)
	}
	obj, emptyList, err := objectsOf(scheme, gvk, unstructured)
	if err != nil {
		return bench.Cache{}, err
	}
	inf, err := mgr.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return bench.Cache{}, fmt.Errorf("informer for %s: %w", env.Resource.Resource, err)
	}
	if _, err := inf.AddEventHandler(env.Handler); err != nil {
		return bench.Cache{}, fmt.Errorf("event handler for %s: %w", env.Resource.Resource, err)
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := mgr.Start(ctx); err != nil && ctx.Err() == nil {
			// The measurement would wait for a sync that never comes: end
			// the child, whose log the parent names.
			fmt.Fprintf(os.Stderr, "cachebench-cr: the manager of %s stopped: %v\n", env.Resource.Resource, err)
			os.Exit(1)
		}
	})
	c := bench.Cache{
		HasSynced: inf.HasSynced,
		ReconcileList: func(ctx context.Context, held func()) (int, error) {
			list := emptyList.DeepCopyObject().(client.ObjectList)
			if err := mgr.GetClient().List(ctx, list); err != nil {
				return 0, fmt.Errorf("list %s through the manager's client: %w", env.Resource.Resource, err)
			}
			held()
			return meta.LenList(list), nil
		},
		Stop: func() { cancel(); wg.Wait() },
	}
	if lean != nil {
		c.Len, c.Lists, c.ListPath = leanCounts(lean)
	} else {
		c.Len = rec.len
	}
	return c, nil
}

// managerOptions are the options of env's manager in this flavour: its cache
// is leancache's (lean) or controller-runtime's, whose informers rec counts.
func (f flavour) managerOptions(env bench.Env, scheme *runtime.Scheme) (opts ctrl.Options, lean *leancache.Cache, rec *recorder) {
	opts = ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, // nothing to serve, and no port to collide on
		// Unstructured objects are read from the cache too, as typed ones are.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	}
	if env.Namespace != "" {
		opts.Cache.DefaultNamespaces = map[string]cache.Config{env.Namespace: {}}
	}
	if f.options != nil {
		f.options(&opts.Cache)
	}
	if f.lean != nil {
		list := leanstore.StreamingOff
		if env.Streaming {
			list = leanstore.StreamingAuto
		}
		lean = leancache.New(leancache.Options{
			// One name per manager: several managers report to one registry.
			Name:      "cachebench-" + env.Resource.Resource,
			Leanstore: append([]leanstore.Option{leanstore.WithStreamingLists(list)}, f.lean...),
		})
		opts.NewCache = lean.NewCache
	} else {
		rec = &recorder{}
		opts.Cache.NewInformer = rec.newInformer
	}
	return opts, lean, rec
}

// objectsOf returns an object and an empty list of gvk: typed from the
// scheme, or unstructured.
func objectsOf(scheme *runtime.Scheme, gvk schema.GroupVersionKind, unstructuredObjects bool) (client.Object, client.ObjectList, error) {
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if unstructuredObjects {
		obj, list := &unstructured.Unstructured{}, &unstructured.UnstructuredList{}
		obj.SetGroupVersionKind(gvk)
		list.SetGroupVersionKind(listGVK)
		return obj, list, nil
	}
	o, err := scheme.New(gvk)
	if err != nil {
		return nil, nil, fmt.Errorf("typed object for %s: %w", gvk, err)
	}
	l, err := scheme.New(listGVK)
	if err != nil {
		return nil, nil, fmt.Errorf("typed list for %s: %w", gvk, err)
	}
	obj, ok := o.(client.Object)
	list, okList := l.(client.ObjectList)
	if !ok || !okList {
		return nil, nil, fmt.Errorf("%s: %T and %T are not a client object and list", gvk, o, l)
	}
	return obj, list, nil
}

// recorder is controller-runtime's default NewInformer (client-go's
// NewSharedIndexInformer, unchanged) keeping what it makes, so that the
// measurement can count the objects in their stores.
type recorder struct {
	mu        sync.Mutex
	informers []toolscache.SharedIndexInformer
}

func (r *recorder) newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	inf := toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.informers = append(r.informers, inf)
	return inf
}

// len counts the objects of every informer made.
func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, inf := range r.informers {
		n += len(inf.GetStore().ListKeys())
	}
	return n
}

// leanCounts reads the objects, the completed lists and the list paths of a
// leancache's informers: leanstore delivers only what changed in a re-list,
// so a forced re-list is complete when the lists grow.
func leanCounts(lean *leancache.Cache) (size func() int, lists func() int, path func() string) {
	size = func() int {
		n := 0
		for _, inf := range lean.Informers() {
			n += len(inf.GetStore().ListKeys())
		}
		return n
	}
	lists = func() int {
		n := 0
		for _, st := range lean.Status() {
			n += st.Lists
		}
		return n
	}
	path = func() string {
		var paths []string
		for _, st := range lean.Status() {
			if p := string(st.ListPath); p != "" && !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
		return strings.Join(paths, ",")
	}
	return size, lists, path
}
