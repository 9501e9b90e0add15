package leanstore

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/informers/admissionregistration"
	"k8s.io/client-go/informers/apiserverinternal"
	"k8s.io/client-go/informers/apps"
	"k8s.io/client-go/informers/autoscaling"
	"k8s.io/client-go/informers/batch"
	"k8s.io/client-go/informers/certificates"
	"k8s.io/client-go/informers/coordination"
	infcore "k8s.io/client-go/informers/core"
	"k8s.io/client-go/informers/discovery"
	"k8s.io/client-go/informers/events"
	"k8s.io/client-go/informers/extensions"
	"k8s.io/client-go/informers/flowcontrol"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/informers/lifecycle"
	"k8s.io/client-go/informers/networking"
	"k8s.io/client-go/informers/node"
	"k8s.io/client-go/informers/policy"
	"k8s.io/client-go/informers/rbac"
	infresource "k8s.io/client-go/informers/resource"
	"k8s.io/client-go/informers/scheduling"
	"k8s.io/client-go/informers/storage"
	"k8s.io/client-go/informers/storagemigration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/inspect"
)

// TypedFactory is a drop-in for client-go's informers.SharedInformerFactory: the
// same group accessors, listers and informers, with lean caches underneath.
//
//	factory := leanstore.NewSharedInformerFactory(clientset, 0)
//	pods := factory.Core().V1().Pods().Lister()
type TypedFactory struct {
	*core[reflect.Type]
	client kubernetes.Interface
}

var _ informers.SharedInformerFactory = (*TypedFactory)(nil)

// NewSharedInformerFactory returns a factory for the typed informers of client's
// API groups. Objects are requested as protobuf (see WithWireFormat), listed with a
// streaming list where the server supports it, and stripped of managedFields.
func NewSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration, opts ...Option) *TypedFactory {
	return &TypedFactory{core: newCore[reflect.Type](defaultResync, opts), client: client}
}

// InformerFor returns the informer for obj's type, creating it on first use.
//
// It builds a leanstore informer that lists and watches what newFunc's
// informer would: the same namespace, label and field selectors (read from a
// inspection of newFunc's list, answered locally, so nothing reaches the server), and
// the indexers newFunc's informer declares. newFunc's informer itself is never
// run, unless leanstore cannot list for it: a clientset without a REST client
// (a fake clientset), a type outside the clientset's own API groups (a custom
// resource's Go type), or a newFunc whose list could not be inspected. Then the
// informer is newFunc's own, stripped by leanstore, and Status says why
// (ListPathClientGo). newFunc may be nil for built-in types.
func (f *TypedFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	t := reflect.TypeOf(obj)
	return f.get(t, func() *Informer { return f.build(obj, newFunc) })
}

func (f *TypedFactory) build(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) *Informer {
	resync, ok := f.opts.customResync[reflect.TypeOf(obj)]
	if !ok {
		resync = f.opts.resync
	}
	gvk, err := kindOf(obj)
	if err != nil {
		return f.failing(obj, schema.GroupResource{}, resync, err)
	}
	guessed, _ := meta.UnsafeGuessKindToResource(gvk)
	gr := guessed.GroupResource()
	rc, why := f.restClient(gvk.GroupVersion())
	if rc == nil {
		return f.clientGoInformer(obj, gvk, gr, resync, newFunc, why)
	}
	req := inspect.Request{Namespace: f.opts.namespace, Resource: guessed.Resource}
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	if newFunc != nil {
		inspected, idx, err := inspect.NewFunc(newFunc, resync, gvk.GroupVersion())
		if err != nil {
			return wrapClientGo(newFunc(f.client, resync), obj, f.opts.name+"/"+gr.String(), gr,
				"InformerFor: what newFunc's informer lists could not be read ("+err.Error()+"); using that informer, stripped", &f.opts, f.metrics)
		}
		req, indexers = inspected, idx
	}
	var disc rest.Interface
	if d := f.client.Discovery(); d != nil {
		if r, ok := d.RESTClient().(*rest.RESTClient); ok && r != nil {
			disc = r
		}
	}
	mapping := newResourceMapping(gvk, req.Resource, disc)
	o := f.opts // a copy: newFunc's selectors apply to this informer only
	if newFunc != nil {
		// newFunc's informer applied its own namespace and tweak (the
		// generated informers pass the factory's) in the inspection: what they did
		// is in the inspected request.
		o.labelSelector = joinSelector(o.labelSelector, req.LabelSelector)
		o.fieldSelector = joinSelector(o.fieldSelector, req.FieldSelector)
		o.tweak = nil
	}
	return newInformer(informerConfig{
		name:     f.opts.name + "/" + mapping.groupResource().String(),
		src:      &restSource{client: rc, namespace: req.Namespace, mapping: mapping, example: obj},
		gr:       mapping.groupResource,
		example:  obj,
		indexers: indexers,
		resync:   resync,
		wire:     string(f.wire()),
		lean:     f.wire() == WireProtobuf,
	}, &o, f.state, f.metrics)
}

// kindOf returns obj's kind in client-go's scheme.
func kindOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("leanstore: %T is not a kind of client-go's scheme: %w", obj, err)
	}
	return gvks[0], nil
}

// clientGoInformer is the informer for a type leanstore cannot list itself:
// newFunc's, or client-go's own factory's when newFunc is nil, stripped.
func (f *TypedFactory) clientGoInformer(obj runtime.Object, gvk schema.GroupVersionKind, gr schema.GroupResource, resync time.Duration, newFunc internalinterfaces.NewInformerFunc, why string) *Informer {
	var model cache.SharedIndexInformer
	if newFunc != nil {
		model = newFunc(f.client, resync)
	} else {
		gi, err := f.clientGoFactory(resync).ForResource(gr.WithVersion(gvk.Version))
		if err != nil {
			return f.failing(obj, gr, resync, fmt.Errorf("leanstore: no informer for %s: %s, and client-go has none either: %w", gvk, why, err))
		}
		model = gi.Informer()
	}
	return wrapClientGo(model, obj, f.opts.name+"/"+gr.String(), gr, why+"; using client-go's informer, stripped", &f.opts, f.metrics)
}

// clientGoFactory is a client-go factory with this factory's scope, for the
// informers leanstore cannot list itself.
func (f *TypedFactory) clientGoFactory(resync time.Duration) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(f.client, resync,
		informers.WithNamespace(f.opts.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { *o = f.opts.listOptions(*o) }))
}

// failing is an informer whose every list fails with err: InformerFor cannot
// return an error, and must not panic. The error reaches Status, the logs, the
// watch-error handlers and Check.
func (f *TypedFactory) failing(obj runtime.Object, gr schema.GroupResource, resync time.Duration, err error) *Informer {
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nil, err },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return nil, err },
	}
	inner := cache.NewSharedIndexInformer(lw, obj, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	return wrapClientGo(inner, obj, f.opts.name+"/"+gr.String(), gr, err.Error(), &f.opts, f.metrics)
}

func (f *TypedFactory) wire() WireFormat {
	if f.opts.wire == WireDefault {
		return WireProtobuf
	}
	return f.opts.wire
}

// restClient returns a REST client for gv that shares the clientset's HTTP
// client, credentials and rate limiter, asking for the factory's wire format.
// It is nil, with the reason, when the clientset has no REST client of its own
// for exactly gv: a fake clientset, or a group the clientset does not serve.
func (f *TypedFactory) restClient(gv schema.GroupVersion) (rest.Interface, string) {
	m := reflect.ValueOf(f.client).MethodByName(clientsetMethod(gv))
	if !m.IsValid() {
		return nil, fmt.Sprintf("the clientset has no client for %s", gv)
	}
	group, ok := m.Call(nil)[0].Interface().(interface{ RESTClient() rest.Interface })
	if !ok {
		return nil, fmt.Sprintf("the clientset's %s has no REST client", clientsetMethod(gv))
	}
	base, ok := group.RESTClient().(*rest.RESTClient)
	if !ok || base == nil || base.Client == nil {
		return nil, "the clientset has no REST client (a fake clientset?)"
	}
	if got := base.APIVersion(); got != gv {
		// clientsetMethod matches a group's first label only: a custom
		// group such as networking.istio.io is not networking.k8s.io.
		return nil, fmt.Sprintf("%s is not one of the clientset's API groups", gv)
	}
	u := base.Get().URL()
	accept, contentType := runtime.ContentTypeProtobuf+","+runtime.ContentTypeJSON, runtime.ContentTypeProtobuf
	if f.wire() == WireJSON {
		accept, contentType = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	}
	rc, err := rest.NewRESTClient(&url.URL{Scheme: u.Scheme, Host: u.Host, User: u.User}, u.Path, rest.ClientContentConfig{
		AcceptContentTypes: accept,
		ContentType:        contentType,
		GroupVersion:       gv,
		Negotiator:         runtime.NewClientNegotiator(scheme.Codecs.WithoutConversion(), gv),
	}, base.GetRateLimiter(), base.Client)
	if err != nil {
		return nil, fmt.Sprintf("REST client for %s: %v", gv, err)
	}
	return rc, ""
}

// clientsetMethod is the clientset accessor of a group version: "" v1 is CoreV1,
// apps/v1 is AppsV1, rbac.authorization.k8s.io/v1 is RbacV1.
func clientsetMethod(gv schema.GroupVersion) string {
	group := "core"
	if gv.Group != "" {
		group, _, _ = strings.Cut(gv.Group, ".")
	}
	if gv.Version == "" {
		return ""
	}
	return strings.ToUpper(group[:1]) + group[1:] + strings.ToUpper(gv.Version[:1]) + gv.Version[1:]
}

// ForResource returns the generic informer of a built-in resource.
func (f *TypedFactory) ForResource(gvr schema.GroupVersionResource) (informers.GenericInformer, error) {
	for kind := range scheme.Scheme.KnownTypes(gvr.GroupVersion()) {
		gvk := gvr.GroupVersion().WithKind(kind)
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural != gvr || strings.HasSuffix(kind, "List") {
			continue
		}
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			return nil, err
		}
		inf := f.InformerFor(obj, nil).(*Informer)
		return genericInformer{informer: inf, resource: gvr.GroupResource()}, nil
	}
	return nil, fmt.Errorf("no informer found for %v", gvr)
}

// InformerName returns nil: leanstore informers report through their own
// metrics (WithMetrics), not client-go's FIFO metrics.
func (f *TypedFactory) InformerName() *cache.InformerName { return nil }

// WaitForCacheSync waits for every started informer to sync and reports which did.
func (f *TypedFactory) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return f.waitForCacheSync(wait.ContextForChannel(stopCh))
}

// WaitForCacheSyncWithContext waits for every started informer to sync or ctx
// to end. Its Err is the factory's invalid option (Err), returned at once, or
// the cause of ctx's end when an informer has not synced.
func (f *TypedFactory) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	res := cache.SyncResult{Synced: f.waitForCacheSync(ctx)}
	if err := f.Err(); err != nil {
		res.Err = err
		return res
	}
	for _, ok := range res.Synced {
		if !ok {
			res.Err = context.Cause(ctx)
		}
	}
	return res
}

func (f *TypedFactory) Admissionregistration() admissionregistration.Interface {
	return admissionregistration.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Internal() apiserverinternal.Interface {
	return apiserverinternal.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Apps() apps.Interface { return apps.New(f, f.opts.namespace, f.opts.tweak) }
func (f *TypedFactory) Autoscaling() autoscaling.Interface {
	return autoscaling.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Batch() batch.Interface { return batch.New(f, f.opts.namespace, f.opts.tweak) }
func (f *TypedFactory) Certificates() certificates.Interface {
	return certificates.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Coordination() coordination.Interface {
	return coordination.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Core() infcore.Interface {
	return infcore.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Discovery() discovery.Interface {
	return discovery.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Events() events.Interface {
	return events.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Extensions() extensions.Interface {
	return extensions.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Flowcontrol() flowcontrol.Interface {
	return flowcontrol.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Lifecycle() lifecycle.Interface {
	return lifecycle.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Networking() networking.Interface {
	return networking.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Node() node.Interface { return node.New(f, f.opts.namespace, f.opts.tweak) }
func (f *TypedFactory) Policy() policy.Interface {
	return policy.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Rbac() rbac.Interface { return rbac.New(f, f.opts.namespace, f.opts.tweak) }
func (f *TypedFactory) Resource() infresource.Interface {
	return infresource.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Scheduling() scheduling.Interface {
	return scheduling.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Storage() storage.Interface {
	return storage.New(f, f.opts.namespace, f.opts.tweak)
}
func (f *TypedFactory) Storagemigration() storagemigration.Interface {
	return storagemigration.New(f, f.opts.namespace, f.opts.tweak)
}
