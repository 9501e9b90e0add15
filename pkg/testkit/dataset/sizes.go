package dataset

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Sizes are mean serialized sizes of the objects of one resource, in bytes.
type Sizes struct {
	Count int `json:"count"`
	// JSON is the mean size of an object as JSON.
	JSON float64 `json:"json"`
	// JSONWithoutManagedFields is JSON minus metadata.managedFields.
	JSONWithoutManagedFields float64 `json:"jsonWithoutManagedFields"`
	// ManagedFields is the mean JSON size of metadata.managedFields.
	ManagedFields float64 `json:"managedFields"`
	// Managers is the mean number of managedFields entries per object.
	Managers float64 `json:"managers"`
	// LastApplied is the mean length of the last-applied annotation.
	LastApplied float64 `json:"lastApplied"`
	// Protobuf is the mean protobuf size; 0 for resources not served as protobuf.
	Protobuf float64 `json:"protobuf"`
}

// measureAtMost bounds how many objects Measure reads: the means of a dataset
// settle long before 10,000 objects, and reading 100,000 Pods as JSON would
// cost the server and this process minutes.
const measureAtMost = 10000

// Measure lists a resource in namespace (all namespaces when empty) and reports the
// mean object sizes of the first 10,000 objects; Count is the number of objects
// measured. labelSelector narrows the list; empty means everything.
func Measure(ctx context.Context, cfg *rest.Config, gvr schema.GroupVersionResource, namespace, labelSelector string) (Sizes, error) {
	var s Sizes
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return s, err
	}
	opts := metav1.ListOptions{LabelSelector: labelSelector, Limit: 500}
	for {
		list, err := dyn.Resource(gvr).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return s, fmt.Errorf("list %s: %w", gvr.Resource, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			full, err := json.Marshal(obj.Object)
			if err != nil {
				return s, err
			}
			mf, _ := json.Marshal(obj.GetManagedFields())
			s.JSON += float64(len(full))
			if len(obj.GetManagedFields()) > 0 {
				s.ManagedFields += float64(len(mf))
				s.Managers += float64(len(obj.GetManagedFields()))
			}
			s.LastApplied += float64(len(obj.GetAnnotations()[LastAppliedAnnotation]))
			obj.SetManagedFields(nil)
			stripped, _ := json.Marshal(obj.Object)
			s.JSONWithoutManagedFields += float64(len(stripped))
			s.Count++
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" || s.Count >= measureAtMost {
			break
		}
	}
	if s.Count == 0 {
		return s, nil
	}
	n := float64(s.Count)
	s.JSON /= n
	s.JSONWithoutManagedFields /= n
	s.ManagedFields /= n
	s.Managers /= n
	s.LastApplied /= n
	if pb, err := protobufSize(ctx, cfg, gvr, namespace, labelSelector); err == nil {
		s.Protobuf = pb
	}
	return s, nil
}

// protobufSize is the mean protobuf size of built-in objects (those in client-go's
// scheme); it fails for custom resources, which are not served as protobuf.
func protobufSize(ctx context.Context, cfg *rest.Config, gvr schema.GroupVersionResource, namespace, labelSelector string) (float64, error) {
	gv := gvr.GroupVersion()
	if !scheme.Scheme.IsVersionRegistered(gv) {
		return 0, fmt.Errorf("%s is not a built-in group version", gv)
	}
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c.AcceptContentTypes = runtime.ContentTypeProtobuf
	c.ContentType = runtime.ContentTypeProtobuf
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return 0, err
	}
	var total float64
	var count int
	opts := metav1.ListOptions{LabelSelector: labelSelector, Limit: 500}
	for {
		obj, err := rc.Get().Namespace(namespace).Resource(gvr.Resource).VersionedParams(&opts, scheme.ParameterCodec).Do(ctx).Get()
		if err != nil {
			return 0, err
		}
		items, err := meta.ExtractList(obj)
		if err != nil {
			return 0, err
		}
		for _, it := range items {
			sized, ok := it.(interface{ Size() int })
			if !ok {
				return 0, fmt.Errorf("%T has no protobuf size", it)
			}
			total += float64(sized.Size())
			count++
		}
		lm, err := meta.ListAccessor(obj)
		if err != nil {
			return 0, err
		}
		if opts.Continue = lm.GetContinue(); opts.Continue == "" || count >= measureAtMost {
			break
		}
	}
	if count == 0 {
		return 0, nil
	}
	return total / float64(count), nil
}

// Resources of the dataset.
var (
	PodsGVR       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	ConfigMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	SecretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// Selector is the label selector of the objects of a resource in the dataset
// spec describes; with the namespace NamespaceOf returns, it lists exactly
// them.
func Selector(spec Spec, gvr schema.GroupVersionResource) string {
	spec.defaults()
	sel := LabelDataset + "=" + spec.Name
	if ClusterScoped(gvr) {
		sel += "," + LabelNamespace + "=" + spec.Namespace
	}
	return sel
}

// NamespaceOf is the namespace of the dataset's objects of a resource: "" for
// cluster-scoped ones.
func NamespaceOf(spec Spec, gvr schema.GroupVersionResource) string {
	if ClusterScoped(gvr) {
		return ""
	}
	return spec.Namespace
}
