package leanstore

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// MetadataFactory is a drop-in for client-go's metadatainformer.SharedInformerFactory:
// informers that hold only each object's metadata, as *metav1.PartialObjectMetadata.
// Metadata still carries managedFields and every annotation (often most of it), so
// stripping matters here as much as for full objects.
type MetadataFactory struct {
	*core[schema.GroupVersionResource]
	client metadata.Interface
}

var _ metadatainformer.SharedInformerFactory = (*MetadataFactory)(nil)

// NewMetadataSharedInformerFactory returns a factory of metadata-only informers.
// The metadata client asks for protobuf.
func NewMetadataSharedInformerFactory(client metadata.Interface, defaultResync time.Duration, opts ...Option) *MetadataFactory {
	return &MetadataFactory{core: newCore[schema.GroupVersionResource](defaultResync, opts), client: client}
}

// ForResource returns the metadata informer of gvr, creating it on first use.
func (f *MetadataFactory) ForResource(gvr schema.GroupVersionResource) informers.GenericInformer {
	inf := f.get(gvr, func() *Informer {
		gr := gvr.GroupResource()
		return newInformer(informerConfig{
			name:     f.opts.name + "/" + gr.String(),
			src:      &metadataSource{client: f.client, gvr: gvr, ns: f.opts.namespace},
			gr:       func() schema.GroupResource { return gr },
			example:  &metav1.PartialObjectMetadata{},
			indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			resync:   f.opts.resync,
			wire:     string(WireProtobuf),
		}, &f.opts, f.state, f.metrics)
	})
	return genericInformer{informer: inf, resource: gvr.GroupResource()}
}

// WaitForCacheSync waits for every started informer to sync and reports which did.
func (f *MetadataFactory) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
	return f.waitForCacheSync(wait.ContextForChannel(stopCh))
}
