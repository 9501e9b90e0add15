package leanstore

import (
	"reflect"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
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
		src := &metadataSource{client: f.client, gvr: gvr, ns: f.opts.namespace, rest: metadataRESTClient(f.client)}
		return newInformer(informerConfig{
			name:     f.opts.name + "/" + gr.String(),
			src:      src,
			gr:       func() schema.GroupResource { return gr },
			example:  &metav1.PartialObjectMetadata{},
			indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			resync:   f.opts.resync,
			client:   f.client,
			wire:     string(WireProtobuf),
			lean:     src.rest != nil,
		}, &f.opts, f.state, f.metrics)
	})
	return genericInformer{informer: inf, resource: gvr.GroupResource()}
}

// WaitForCacheSync waits for every started informer to sync and reports which did.
func (f *MetadataFactory) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
	return f.waitForCacheSync(wait.ContextForChannel(stopCh))
}

// metadataRESTClient returns the REST client inside client-go's metadata client,
// which the lean decoder needs to read raw protobuf responses. client-go does not
// export it, so it is read from the unexported field; when that field is not
// there (another client-go version, or another implementation of
// metadata.Interface) it returns nil and the informer decodes as client-go does.
func metadataRESTClient(c metadata.Interface) rest.Interface {
	mc, ok := c.(*metadata.Client)
	if !ok || mc == nil {
		return nil
	}
	f := reflect.ValueOf(mc).Elem().FieldByName("client")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*rest.RESTClient]() {
		return nil
	}
	rc := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(*rest.RESTClient)
	if rc == nil {
		return nil
	}
	return rc
}
