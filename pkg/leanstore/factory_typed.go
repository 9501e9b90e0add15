package leanstore

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
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

// InformerFor returns the informer for obj's type, creating it on first use. It
// never runs newFunc's list and watch: it builds a leanstore informer with the
// indexers that newFunc's informer declares. When the clientset has no REST client
// (a fake clientset), it falls back to newFunc's informer with leanstore's stripping.
func (f *TypedFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	t := reflect.TypeOf(obj)
	return f.get(t, func() *Informer { return f.build(obj, newFunc) })
}

func (f *TypedFactory) build(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) *Informer {
	t := reflect.TypeOf(obj)
	resync, ok := f.opts.customResync[t]
	if !ok {
		resync = f.opts.resync
	}
	var model cache.SharedIndexInformer
	if newFunc != nil {
		model = newFunc(f.client, resync) // never started: only its indexers are used
	}
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	if model != nil {
		indexers = model.GetIndexer().GetIndexers()
	}

	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	var rc rest.Interface
	if err == nil {
		rc, err = f.restClient(gvks[0].GroupVersion())
	}
	if err != nil || rc == nil {
		if model == nil {
			panic(fmt.Sprintf("leanstore: no informer for %T: %v", obj, err))
		}
		gr := schema.GroupResource{}
		if len(gvks) > 0 {
			plural, _ := meta.UnsafeGuessKindToResource(gvks[0])
			gr = plural.GroupResource()
		}
		return wrapClientGo(model, f.opts.name+"/"+gr.String(), gr, &f.opts, f.metrics)
	}
	var disc rest.Interface
	if d := f.client.Discovery(); d != nil {
		if r, ok := d.RESTClient().(*rest.RESTClient); ok && r != nil {
			disc = r
		}
	}
	mapping := newResourceMapping(gvks[0], disc)
	return newInformer(informerConfig{
		name:     f.opts.name + "/" + mapping.groupResource().String(),
		src:      &restSource{client: rc, namespace: f.opts.namespace, mapping: mapping, example: obj},
		gr:       mapping.groupResource,
		example:  obj,
		indexers: indexers,
		resync:   resync,
		wire:     string(f.wire()),
		lean:     f.wire() == WireProtobuf,
	}, &f.opts, f.state, f.metrics)
}

func (f *TypedFactory) wire() WireFormat {
	if f.opts.wire == WireDefault {
		return WireProtobuf
	}
	return f.opts.wire
}

// restClient returns a REST client for gv that shares the clientset's HTTP
// client, credentials and rate limiter, asking for the factory's wire format.
// It is nil when the clientset has no real REST client for gv.
func (f *TypedFactory) restClient(gv schema.GroupVersion) (rest.Interface, error) {
	m := reflect.ValueOf(f.client).MethodByName(clientsetMethod(gv))
	if !m.IsValid() {
		return nil, fmt.Errorf("the clientset has no method %s for %s", clientsetMethod(gv), gv)
	}
	group, ok := m.Call(nil)[0].Interface().(interface{ RESTClient() rest.Interface })
	if !ok {
		return nil, fmt.Errorf("%s has no REST client", gv)
	}
	base, ok := group.RESTClient().(*rest.RESTClient)
	if !ok || base == nil || base.Client == nil {
		return nil, nil
	}
	u := base.Get().URL()
	accept, contentType := runtime.ContentTypeProtobuf+","+runtime.ContentTypeJSON, runtime.ContentTypeProtobuf
	if f.wire() == WireJSON {
		accept, contentType = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	}
	return rest.NewRESTClient(&url.URL{Scheme: u.Scheme, Host: u.Host, User: u.User}, u.Path, rest.ClientContentConfig{
		AcceptContentTypes: accept,
		ContentType:        contentType,
		GroupVersion:       gv,
		Negotiator:         runtime.NewClientNegotiator(scheme.Codecs.WithoutConversion(), gv),
	}, base.GetRateLimiter(), base.Client)
}

// clientsetMethod is the clientset accessor of a group version: "" v1 is CoreV1,
// apps/v1 is AppsV1, rbac.authorization.k8s.io/v1 is RbacV1.
func clientsetMethod(gv schema.GroupVersion) string {
	group := "core"
	if gv.Group != "" {
		group, _, _ = strings.Cut(gv.Group, ".")
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

// WaitForCacheSyncWithContext waits for every started informer to sync or ctx to end.
func (f *TypedFactory) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	res := cache.SyncResult{Synced: f.waitForCacheSync(ctx)}
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
