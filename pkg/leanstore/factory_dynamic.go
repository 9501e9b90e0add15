package leanstore

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// DynamicFactory is a drop-in for client-go's
// dynamicinformer.DynamicSharedInformerFactory: informers of any resource, custom
// ones included, holding *unstructured.Unstructured objects (decoded from JSON,
// the only encoding custom resources are served in).
type DynamicFactory struct {
	*core[schema.GroupVersionResource]
	client dynamic.Interface
}

var _ dynamicinformer.DynamicSharedInformerFactory = (*DynamicFactory)(nil)

// NewDynamicSharedInformerFactory returns a factory of dynamic informers.
func NewDynamicSharedInformerFactory(client dynamic.Interface, defaultResync time.Duration, opts ...Option) *DynamicFactory {
	return &DynamicFactory{core: newCore[schema.GroupVersionResource](defaultResync, opts), client: client}
}

// ForResource returns the informer of gvr, creating it on first use.
func (f *DynamicFactory) ForResource(gvr schema.GroupVersionResource) informers.GenericInformer {
	inf := f.get(gvr, func() *Informer {
		gr := gvr.GroupResource()
		return newInformer(informerConfig{
			name:     f.opts.name + "/" + gr.String(),
			src:      &dynamicSource{client: f.client.Resource(gvr), ns: f.opts.namespace},
			gr:       func() schema.GroupResource { return gr },
			example:  &unstructured.Unstructured{},
			indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			resync:   f.opts.resync,
			client:   f.client,
			wire:     string(WireJSON),
		}, &f.opts, f.state, f.metrics)
	})
	return genericInformer{informer: inf, resource: gvr.GroupResource()}
}

// WaitForCacheSync waits for every started informer to sync and reports which did.
func (f *DynamicFactory) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
	return f.waitForCacheSync(wait.ContextForChannel(stopCh))
}
