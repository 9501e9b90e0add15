package leanstore

import (
	"context"
	"io"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/internal/reflector"
)

// The sources the list/watch loop (internal/reflector) makes its requests
// through; restSource and metadataSource also hand out raw protobuf.
var (
	_ reflector.RawSource = (*restSource)(nil)
	_ reflector.Source    = (*dynamicSource)(nil)
	_ reflector.RawSource = (*metadataSource)(nil)
)

// restSource lists and watches a built-in resource with a typed REST client, so
// that objects decode to client-go's Go types.
type restSource struct {
	client    rest.Interface
	namespace string
	mapping   *resourceMapping
	example   runtime.Object
}

func (s *restSource) NewObject() runtime.Object { return newLike(s.example) }

// get is the GET request of a list, or of a watch when opts.Watch is set.
func (s *restSource) get(opts *metav1.ListOptions) *rest.Request {
	return s.client.Get().
		NamespaceIfScoped(s.ns(), s.ns() != "").
		Resource(s.mapping.resource()).
		VersionedParams(opts, scheme.ParameterCodec)
}

func (s *restSource) RawList(ctx context.Context, opts metav1.ListOptions) (io.ReadCloser, error) {
	return s.get(&opts).SetHeader("Accept", runtime.ContentTypeProtobuf).Stream(ctx)
}

func (s *restSource) RawWatch(ctx context.Context, opts metav1.ListOptions) (io.ReadCloser, error) {
	opts.Watch = true
	return s.get(&opts).SetHeader("Accept", runtime.ContentTypeProtobuf).Stream(ctx)
}

// newLike returns a new empty object of example's type.
func newLike(example runtime.Object) runtime.Object {
	return reflect.New(reflect.TypeOf(example).Elem()).Interface().(runtime.Object)
}

func (s *restSource) Resolve(ctx context.Context) error { return s.mapping.resolve(ctx) }

func (s *restSource) ns() string {
	if !s.mapping.namespaced() {
		return ""
	}
	return s.namespace
}

func (s *restSource) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return s.get(&opts).Timeout(timeoutOf(opts)).Do(ctx).Get()
}

func (s *restSource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return s.get(&opts).Timeout(timeoutOf(opts)).Watch(ctx)
}

// timeoutOf is the client-side time-out of a request with opts, as client-go's
// generated clients set it: the server's time-out, or none.
func timeoutOf(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}

// dynamicSource lists and watches any resource as unstructured objects (JSON).
type dynamicSource struct {
	client dynamic.NamespaceableResourceInterface
	ns     string
}

func (s *dynamicSource) Resolve(context.Context) error { return nil }

func (s *dynamicSource) res() dynamic.ResourceInterface {
	if s.ns == "" {
		return s.client
	}
	return s.client.Namespace(s.ns)
}

func (s *dynamicSource) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return s.res().List(ctx, opts)
}

func (s *dynamicSource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return s.res().Watch(ctx, opts)
}

// metadataSource lists and watches only the metadata of a resource, as
// PartialObjectMetadata.
type metadataSource struct {
	client metadata.Interface
	gvr    schema.GroupVersionResource
	ns     string
	// rest is the metadata client's own REST client, for raw requests; nil when
	// it could not be had (see metadataRESTClient).
	rest rest.Interface
}

const (
	acceptPartialList  = runtime.ContentTypeProtobuf + ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
	acceptPartialWatch = runtime.ContentTypeProtobuf + ";as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
)

func (s *metadataSource) NewObject() runtime.Object { return &metav1.PartialObjectMetadata{} }

// path is the resource's URL path, as the metadata client builds it.
func (s *metadataSource) path() string {
	p := "/apis/" + s.gvr.Group + "/" + s.gvr.Version
	if s.gvr.Group == "" {
		p = "/api/" + s.gvr.Version
	}
	if s.ns != "" {
		p += "/namespaces/" + s.ns
	}
	return p + "/" + s.gvr.Resource
}

func (s *metadataSource) RawList(ctx context.Context, opts metav1.ListOptions) (io.ReadCloser, error) {
	return s.rest.Get().AbsPath(s.path()).
		SpecificallyVersionedParams(&opts, metav1.ParameterCodec, schema.GroupVersion{Version: "v1"}).
		SetHeader("Accept", acceptPartialList).
		Stream(ctx)
}

func (s *metadataSource) RawWatch(ctx context.Context, opts metav1.ListOptions) (io.ReadCloser, error) {
	opts.Watch = true
	return s.rest.Get().AbsPath(s.path()).
		SpecificallyVersionedParams(&opts, metav1.ParameterCodec, schema.GroupVersion{Version: "v1"}).
		SetHeader("Accept", acceptPartialWatch).
		Stream(ctx)
}

func (s *metadataSource) Resolve(context.Context) error { return nil }

func (s *metadataSource) res() metadata.ResourceInterface {
	if s.ns == "" {
		return s.client.Resource(s.gvr)
	}
	return s.client.Resource(s.gvr).Namespace(s.ns)
}

func (s *metadataSource) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return s.res().List(ctx, opts)
}

func (s *metadataSource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return s.res().Watch(ctx, opts)
}
