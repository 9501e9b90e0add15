package resilience

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/leanstore"
)

// leanFactory is what the harness needs of a leanstore factory.
type leanFactory interface {
	StartWithContext(ctx context.Context)
	Shutdown()
	Check(ctx context.Context) error
}

// FactoryInformer is a leanstore informer that runs through its factory, as
// a controller runs it, so that the factory's readiness check covers it:
// RunWithContext starts the factory and shuts it down when ctx ends, and
// Check is the factory's Check. Run records both the informer's Status and
// its readiness at the end of the fault and after convergence.
type FactoryInformer struct {
	*leanstore.Informer
	factory leanFactory
}

var _ cache.SharedIndexInformer = (*FactoryInformer)(nil)

// RunWithContext starts the factory's informers and blocks until ctx ends
// and they have stopped.
func (f *FactoryInformer) RunWithContext(ctx context.Context) {
	f.factory.StartWithContext(ctx)
	<-ctx.Done()
	f.factory.Shutdown()
}

// Run is RunWithContext with a stop channel.
func (f *FactoryInformer) Run(stopCh <-chan struct{}) {
	f.RunWithContext(wait.ContextForChannel(stopCh))
}

// Check is the factory's readiness check: an error while the informer has
// not synced or has failed WithDegradedAfter times in a row.
func (f *FactoryInformer) Check(ctx context.Context) error { return f.factory.Check(ctx) }

// LeanConfigMaps returns a constructor of leanstore's typed ConfigMaps
// informer (leanstore.NewSharedInformerFactory: protobuf, the lean decoder,
// managedFields stripped), scoped to the namespace, with opts applied after
// the namespace, e.g.
//
//	resilience.LeanConfigMaps(
//		leanstore.WithStreamingLists(leanstore.StreamingOff),
//		leanstore.WithWatchIdleTimeout(5*time.Second),
//	)
func LeanConfigMaps(opts ...leanstore.Option) NewInformer {
	return func(cfg *rest.Config, namespace string) (cache.SharedIndexInformer, error) {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		f := leanstore.NewSharedInformerFactory(cs, 0, leanOptions(namespace, opts)...)
		return &FactoryInformer{Informer: leanstore.Unwrap(f.Core().V1().ConfigMaps().Informer()), factory: f}, nil
	}
}

// LeanMetadataConfigMaps is LeanConfigMaps for leanstore's metadata-only
// informer (leanstore.NewMetadataSharedInformerFactory).
func LeanMetadataConfigMaps(opts ...leanstore.Option) NewInformer {
	return func(cfg *rest.Config, namespace string) (cache.SharedIndexInformer, error) {
		mc, err := metadata.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		f := leanstore.NewMetadataSharedInformerFactory(mc, 0, leanOptions(namespace, opts)...)
		gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
		return &FactoryInformer{Informer: leanstore.Unwrap(f.ForResource(gvr).Informer()), factory: f}, nil
	}
}

// leanOptions scopes the factory to the namespace and gives it a name of its
// own, so that its Prometheus metrics (not registered here) and logs are
// told apart from other factories in the process.
func leanOptions(namespace string, opts []leanstore.Option) []leanstore.Option {
	return append([]leanstore.Option{leanstore.WithNamespace(namespace), leanstore.WithName("resilience")}, opts...)
}
