package leanstore

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// source makes the list and watch requests of one resource.
type source interface {
	// list returns one page of a LIST.
	list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	// resolve is called before each list; it may look up the resource's name and
	// scope with discovery the first time.
	resolve(ctx context.Context) error
}

// restSource lists and watches a built-in resource with a typed REST client, so
// that objects decode to client-go's Go types.
type restSource struct {
	client    rest.Interface
	namespace string
	mapping   *resourceMapping
}

func (s *restSource) resolve(ctx context.Context) error { return s.mapping.resolve(ctx) }

func (s *restSource) ns() string {
	if !s.mapping.namespaced() {
		return ""
	}
	return s.namespace
}

func (s *restSource) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return s.client.Get().
		NamespaceIfScoped(s.ns(), s.ns() != "").
		Resource(s.mapping.resource()).
		VersionedParams(&opts, scheme.ParameterCodec).
		Timeout(timeout).
		Do(ctx).
		Get()
}

func (s *restSource) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return s.client.Get().
		NamespaceIfScoped(s.ns(), s.ns() != "").
		Resource(s.mapping.resource()).
		VersionedParams(&opts, scheme.ParameterCodec).
		Timeout(timeout).
		Watch(ctx)
}

// dynamicSource lists and watches any resource as unstructured objects (JSON).
type dynamicSource struct {
	client dynamic.NamespaceableResourceInterface
	ns     string
}

func (s *dynamicSource) resolve(context.Context) error { return nil }

func (s *dynamicSource) res() dynamic.ResourceInterface {
	if s.ns == "" {
		return s.client
	}
	return s.client.Namespace(s.ns)
}

func (s *dynamicSource) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return s.res().List(ctx, opts)
}

func (s *dynamicSource) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return s.res().Watch(ctx, opts)
}

// metadataSource lists and watches only the metadata of a resource, as
// PartialObjectMetadata.
type metadataSource struct {
	client metadata.Interface
	gvr    schema.GroupVersionResource
	ns     string
}

func (s *metadataSource) resolve(context.Context) error { return nil }

func (s *metadataSource) res() metadata.ResourceInterface {
	if s.ns == "" {
		return s.client.Resource(s.gvr)
	}
	return s.client.Resource(s.gvr).Namespace(s.ns)
}

func (s *metadataSource) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return s.res().List(ctx, opts)
}

func (s *metadataSource) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return s.res().Watch(ctx, opts)
}
