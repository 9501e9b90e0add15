package leanstore

import (
	"context"
	"fmt"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/reflector"
)

// NewRESTInformer returns one informer of resource, listed and watched through
// client, that caches objects of example's Go type. It is for callers that make
// their own REST clients and so cannot use the typed factory's clientset
// accessors: controller-runtime's cache, whose informers are of any type in the
// manager's scheme, an operator's own CRD Go types included.
//
// client must be a REST client for resource's group version that decodes into
// example's type (a codec of a scheme that knows it). A type of client-go's own
// scheme is read with the lean protobuf decoder, unless WithWireFormat(WireJSON)
// is given; any other type, such as a custom resource (served as JSON only), is
// requested as JSON and decoded by client, then stripped. namespaced tells
// whether the resource is namespaced. indexers may be nil (then the namespace
// index). The options apply to this informer alone: WithNamespace and the
// selectors scope it, WithName names it (the informer is NAME/RESOURCE), and
// WithMetrics registers its metrics, an error when that fails. Nothing runs until
// Run or RunWithContext.
func NewRESTInformer(client rest.Interface, resource schema.GroupVersionResource, namespaced bool, example runtime.Object, resync time.Duration, indexers cache.Indexers, opts ...Option) (*Informer, error) {
	switch {
	case client == nil || (reflect.ValueOf(client).Kind() == reflect.Pointer && reflect.ValueOf(client).IsNil()):
		return nil, fmt.Errorf("rest informer for %s: no REST client", resource)
	case resource.Resource == "" || resource.Version == "":
		return nil, fmt.Errorf("rest informer: resource %q needs a version and a name", resource)
	case example == nil || reflect.TypeOf(example).Kind() != reflect.Pointer:
		return nil, fmt.Errorf("rest informer for %s: example must be a pointer to an object, not %T", resource, example)
	}
	o := newOptions(resync, opts)
	if o.err != nil {
		return nil, fmt.Errorf("rest informer for %s: %w", resource, o.err)
	}
	if o.name == "" {
		o.name = "leanstore"
	}
	if indexers == nil {
		indexers = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	}
	gr := resource.GroupResource()
	cfg := informerConfig{
		name:     o.name + "/" + gr.String(),
		gr:       func() schema.GroupResource { return gr },
		example:  example,
		indexers: indexers,
		resync:   o.resync,
	}
	if builtIn(example, resource.GroupVersion()) && o.wire != WireJSON {
		mapping := &resourceMapping{gvk: resource.GroupVersion().WithKind(""), res: resource.Resource, scoped: namespaced, resolved: true}
		cfg.src = &restSource{client: client, namespace: o.namespace, mapping: mapping, example: example}
		cfg.wire, cfg.lean = string(WireProtobuf), true
	} else {
		cfg.src = &jsonSource{client: client, resource: resource.Resource, namespace: scopedNamespace(namespaced, o.namespace)}
		cfg.wire = string(WireJSON)
	}

	var inf *Informer
	m, err := newMetrics(o.name, o.registerer, func() []*Informer { return []*Informer{inf} })
	if err != nil {
		return nil, fmt.Errorf("rest informer for %s: register metrics: %w", resource, err)
	}
	inf = newInformer(cfg, &o, &reflector.StreamingState{}, m)
	return inf, nil
}

// builtIn tells whether example's type is the one client-go's scheme has for a
// kind of gv, which the lean protobuf decoder reads.
func builtIn(example runtime.Object, gv schema.GroupVersion) bool {
	gvks, _, err := scheme.Scheme.ObjectKinds(example)
	if err != nil {
		return false
	}
	for _, gvk := range gvks {
		if gvk.GroupVersion() == gv {
			return true
		}
	}
	return false
}

func scopedNamespace(namespaced bool, ns string) string {
	if !namespaced {
		return ""
	}
	return ns
}

// jsonSource lists and watches a resource of any group as JSON through a REST
// client that decodes into the caller's types. List options are encoded with
// meta/v1's parameter codec: client-go's scheme cannot convert them to a group
// it does not know, such as a custom resource's.
type jsonSource struct {
	client    rest.Interface
	resource  string
	namespace string
}

func (s *jsonSource) request(opts *metav1.ListOptions) *rest.Request {
	return s.client.Get().
		NamespaceIfScoped(s.namespace, s.namespace != "").
		Resource(s.resource).
		SpecificallyVersionedParams(opts, metav1.ParameterCodec, schema.GroupVersion{Version: "v1"}).
		SetHeader("Accept", runtime.ContentTypeJSON).
		Timeout(timeoutOf(*opts))
}

func (s *jsonSource) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return s.request(&opts).Do(ctx).Get()
}

func (s *jsonSource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return s.request(&opts).Watch(ctx)
}

func (s *jsonSource) Resolve(context.Context) error { return nil }
