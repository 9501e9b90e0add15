package leancache

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/cachetune/cachetune/pkg/leanstore"
)

// builder makes the informers of one controller-runtime cache: it is the
// cache's NewInformer hook.
type builder struct {
	owner      *Cache
	config     *rest.Config
	httpClient *http.Client
	scheme     *runtime.Scheme
	codecs     serializer.CodecFactory
	mapper     meta.RESTMapper
}

// variant is which of controller-runtime's three informer maps an informer is
// for.
type variant string

const (
	typed        variant = ""
	unstructured variant = "unstructured"
	metadataOnly variant = "metadata"
)

func variantOf(obj runtime.Object) variant {
	switch obj.(type) {
	case runtime.Unstructured:
		return unstructured
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return metadataOnly
	}
	return typed
}

// newInformer has the signature of cache.Options.NewInformer. controller-runtime
// calls SetWatchErrorHandlerWithContext (when it has a handler) and then
// SetTransform on what it returns and gives up on the informer when either
// fails: an informer that could not be built returns its error there, so that
// GetInformer, or the controller whose watch asked for it, fails with it.
func (b *builder) newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	inf, err := b.build(lw, obj, resync, indexers)
	if err != nil {
		return &failedInformer{SharedIndexInformer: toolscache.NewSharedIndexInformer(lw, obj, resync, indexers), err: err}
	}
	return inf
}

func (b *builder) build(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) (*informer, error) {
	v := variantOf(obj)
	gvk, err := b.gvkOf(v, obj)
	if err != nil {
		return nil, err
	}
	mapping, err := b.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("leancache: %w", err)
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	sc, err := probeScope(lw, gvk, mapping.Resource, namespaced)
	if err != nil {
		return nil, fmt.Errorf("leancache: %w", err)
	}

	reg := &recorder{}
	opts := b.leanstoreOptions(v, sc, reg)

	var li *leanstore.Informer
	switch v {
	case typed:
		client, err := apiutil.RESTClientForGVK(gvk, false, false, b.config, b.codecs, b.httpClient)
		if err != nil {
			return nil, fmt.Errorf("leancache: REST client for %s: %w", gvk, err)
		}
		example := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
		li, err = leanstore.NewRESTInformer(client, mapping.Resource, namespaced, example, resync, indexers, opts...)
		if err != nil {
			return nil, fmt.Errorf("leancache: %w", err)
		}
	case unstructured:
		dc, err := dynamic.NewForConfigAndClient(b.plainConfig(), b.httpClient)
		if err != nil {
			return nil, fmt.Errorf("leancache: dynamic client: %w", err)
		}
		f := leanstore.NewDynamicSharedInformerFactory(dc, resync, opts...)
		li = leanstore.Unwrap(f.ForResource(mapping.Resource).Informer())
	case metadataOnly:
		mc, err := metadata.NewForConfigAndClient(b.plainConfig(), b.httpClient)
		if err != nil {
			return nil, fmt.Errorf("leancache: metadata client: %w", err)
		}
		f := leanstore.NewMetadataSharedInformerFactory(mc, resync, opts...)
		li = leanstore.Unwrap(f.ForResource(mapping.Resource).Informer())
	}
	if li == nil {
		return nil, fmt.Errorf("leancache: no leanstore informer for %s", gvk)
	}
	if missing := missingIndexers(li, indexers); len(missing) > 0 {
		if err := li.AddIndexers(missing); err != nil {
			return nil, fmt.Errorf("leancache: indexers of %s: %w", gvk, err)
		}
	}
	inf := &informer{Informer: li, owner: b.owner, metrics: reg}
	if v == metadataOnly {
		// As controller-runtime's own metadata informers do: the server sends
		// PartialObjectMetadata without the resource's kind, which mapping
		// functions and the client need.
		inf.gvk = &gvk
		if err := inf.SetTransform(nil); err != nil {
			return nil, fmt.Errorf("leancache: %w", err)
		}
	}
	b.owner.add(inf)
	return inf, nil
}

// gvkOf is the kind of obj: from the scheme for a typed object, from the
// object itself for an unstructured or metadata-only one, which must carry it.
func (b *builder) gvkOf(v variant, obj runtime.Object) (schema.GroupVersionKind, error) {
	if v == typed {
		gvk, err := apiutil.GVKForObject(obj, b.scheme)
		if err != nil {
			return gvk, fmt.Errorf("leancache: %w", err)
		}
		return gvk, nil
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if _, isList := obj.(*metav1.PartialObjectMetadataList); isList || gvk.Kind == "" || gvk.Version == "" {
		return gvk, fmt.Errorf("leancache: a %s informer needs the object's kind and version, got %q for %T", v, gvk, obj)
	}
	return gvk, nil
}

// leanstoreOptions are the cache's leanstore options for one informer, scoped
// as its list and watch are (sc) and named after the cache, the variant and
// the namespace; its metrics go to reg unless metrics are off.
func (b *builder) leanstoreOptions(v variant, sc scope, reg *recorder) []leanstore.Option {
	name := b.owner.opts.Name
	if v != typed {
		name += ":" + string(v)
	}
	if sc.namespace != "" {
		name += "@" + sc.namespace
	}
	// controller-runtime's logger first, so that a leanstore.WithLogger of
	// the caller's, applied after it, wins.
	opts := append([]leanstore.Option{leanstore.WithLogger(defaultLogger)}, b.owner.opts.Leanstore...)
	opts = append(opts,
		leanstore.WithNamespace(sc.namespace),
		leanstore.WithLabelSelector(sc.labelSelector),
		leanstore.WithFieldSelector(sc.fieldSelector),
		leanstore.WithTweakListOptions(nil),
		leanstore.WithName(name),
		leanstore.WithMetrics(nil),
	)
	if !b.owner.opts.DisableMetrics {
		opts = append(opts, leanstore.WithMetrics(reg))
	}
	return opts
}

// plainConfig is the config without a negotiated serializer: the dynamic and
// metadata clients bring their own, as in controller-runtime.
func (b *builder) plainConfig() *rest.Config {
	cfg := rest.CopyConfig(b.config)
	cfg.NegotiatedSerializer = nil
	return cfg
}

func missingIndexers(inf toolscache.SharedIndexInformer, want toolscache.Indexers) toolscache.Indexers {
	have := inf.GetIndexer().GetIndexers()
	out := toolscache.Indexers{}
	for k, f := range want {
		if _, ok := have[k]; !ok {
			out[k] = f
		}
	}
	return out
}

// informer is a leanstore informer as controller-runtime's cache holds it.
type informer struct {
	*leanstore.Informer
	owner   *Cache
	metrics *recorder
	// gvk, when set, is given to every object before the caller's transform
	// (metadata-only informers).
	gvk *schema.GroupVersionKind

	mu      sync.Mutex
	started bool
}

// SetTransform sets the caller's transform, which runs after leanstore's
// stripping (and, for metadata-only informers, after the kind is set).
func (i *informer) SetTransform(t toolscache.TransformFunc) error {
	if i.gvk == nil {
		return i.Informer.SetTransform(t)
	}
	gvk := *i.gvk
	return i.Informer.SetTransform(func(obj any) (any, error) {
		if o, ok := obj.(runtime.Object); ok {
			o.GetObjectKind().SetGroupVersionKind(gvk)
		}
		if t == nil {
			return obj, nil
		}
		return t(obj)
	})
}

// Run runs the informer until stopCh is closed.
func (i *informer) Run(stopCh <-chan struct{}) {
	i.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext runs the informer until ctx ends. Status, Census and the
// metrics cover it from its creation until it stops.
func (i *informer) RunWithContext(ctx context.Context) {
	i.mu.Lock()
	i.started = true
	i.mu.Unlock()
	defer i.owner.remove(i)
	i.Informer.RunWithContext(ctx)
}

func (i *informer) isStarted() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.started
}

// failedInformer stands for an informer that could not be built: it never runs
// and reports its error to the first call controller-runtime makes.
type failedInformer struct {
	toolscache.SharedIndexInformer
	err error
}

func (f *failedInformer) SetTransform(toolscache.TransformFunc) error { return f.err }

func (f *failedInformer) SetWatchErrorHandler(toolscache.WatchErrorHandler) error { return f.err }

func (f *failedInformer) SetWatchErrorHandlerWithContext(toolscache.WatchErrorHandlerWithContext) error {
	return f.err
}

func (f *failedInformer) Run(stopCh <-chan struct{}) { <-stopCh }

func (f *failedInformer) RunWithContext(ctx context.Context) { <-ctx.Done() }
