package leanstore

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
)

// LastAppliedAnnotation is the annotation kubectl's client-side apply writes: a
// full copy of the applied object, often the largest thing in ObjectMeta.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// PruneFunc removes parts of an object that a controller never reads. It is called
// on a freshly decoded object that nobody else holds yet, so it may change the
// object in place. It must be idempotent: applied to its own output it must change
// nothing, because client-go may run a transform twice on one object.
type PruneFunc func(obj runtime.Object) error

// stripper holds the stripping configuration of a factory and applies it, in a
// fixed order: managedFields, annotations, prunes for the object's resource, then
// the user's own transform, then string interning or sharing.
type stripper struct {
	managedFields      bool
	annotations        map[string]bool
	annotationPrefixes []string
	prunes             map[schema.GroupResource][]PruneFunc
	typedPrunes        map[reflect.Type][]PruneFunc
	user               cache.TransformFunc
	intern             bool
	share              bool
}

// apply strips obj in place and returns it (or what the user's transform
// returned). gr names the resource, to select prunes.
func (s *stripper) apply(obj interface{}, gr schema.GroupResource) (interface{}, error) {
	if _, tombstone := obj.(cache.DeletedFinalStateUnknown); tombstone {
		return obj, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, fmt.Errorf("strip %T: %w", obj, err)
	}
	if s.managedFields && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	if ann := m.GetAnnotations(); len(ann) > 0 && (len(s.annotations) > 0 || len(s.annotationPrefixes) > 0) {
		stripAnnotations(m, ann, s.annotations, s.annotationPrefixes)
	}
	if ro, ok := obj.(runtime.Object); ok {
		for _, p := range s.prunes[gr] {
			if err := p(ro); err != nil {
				return obj, fmt.Errorf("prune %s %s/%s: %w", gr, m.GetNamespace(), m.GetName(), err)
			}
		}
		for _, p := range s.typedPrunes[reflect.TypeOf(obj)] {
			if err := p(ro); err != nil {
				return obj, fmt.Errorf("prune %T %s/%s: %w", obj, m.GetNamespace(), m.GetName(), err)
			}
		}
	}
	if s.user != nil {
		if obj, err = s.user(obj); err != nil {
			return obj, err
		}
	}
	switch {
	case s.share:
		shareValues(obj) // interns strings as it goes
	case s.intern:
		internStrings(obj)
	}
	return obj, nil
}

// stripAnnotations deletes the configured keys. It copies the map only when a key
// must go, so objects without such annotations keep their map untouched.
func stripAnnotations(m metaAccessor, ann map[string]string, keys map[string]bool, prefixes []string) {
	drop := func(k string) bool {
		if keys[k] {
			return true
		}
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
		return false
	}
	n := 0
	for k := range ann {
		if drop(k) {
			n++
		}
	}
	if n == 0 {
		return
	}
	if n == len(ann) {
		m.SetAnnotations(nil)
		return
	}
	kept := make(map[string]string, len(ann)-n)
	for k, v := range ann {
		if !drop(k) {
			kept[k] = v
		}
	}
	m.SetAnnotations(kept)
}

type metaAccessor interface {
	SetAnnotations(map[string]string)
}

// StripManagedFields is a cache.TransformFunc that removes metadata.managedFields,
// for use with plain client-go informers (informers.WithTransform). It is
// idempotent. leanstore's factories do this by default.
func StripManagedFields(obj interface{}) (interface{}, error) {
	s := stripper{managedFields: true}
	return s.apply(obj, schema.GroupResource{})
}

// StripManagedFieldsAndLastApplied is a cache.TransformFunc that removes
// metadata.managedFields and kubectl's last-applied annotation. It is idempotent.
func StripManagedFieldsAndLastApplied(obj interface{}) (interface{}, error) {
	s := stripper{managedFields: true, annotations: map[string]bool{LastAppliedAnnotation: true}}
	return s.apply(obj, schema.GroupResource{})
}

// Transform returns a cache.TransformFunc that strips objects as a factory built
// with opts would (managedFields unless WithKeepManagedFields, annotations,
// prunes, WithTransform, interning or sharing), for client-go's own informers:
//
//	informers.NewSharedInformerFactoryWithOptions(cs, 0,
//		informers.WithTransform(leanstore.Transform(leanstore.WithStripLastApplied())))
//
// Prunes added WithPrune apply to objects whose resource the function can tell
// from their kind: typed objects of client-go's scheme, and unstructured or
// metadata-only objects that carry apiVersion and kind. Options that concern
// lists and watches are ignored. The function is idempotent, as client-go
// requires.
func Transform(opts ...Option) cache.TransformFunc {
	o := newOptions(0, opts)
	s := o.strip
	return func(obj interface{}) (interface{}, error) {
		var gr schema.GroupResource
		if len(s.prunes) > 0 {
			gr = resourceOf(obj)
		}
		return s.apply(obj, gr)
	}
}

// resourceOf guesses the resource of obj from its kind, or returns the zero
// GroupResource when obj says nothing of its kind.
func resourceOf(obj interface{}) schema.GroupResource {
	ro, ok := obj.(runtime.Object)
	if !ok {
		return schema.GroupResource{}
	}
	gvk := ro.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		gvks, _, err := scheme.Scheme.ObjectKinds(ro)
		if err != nil || len(gvks) == 0 {
			return schema.GroupResource{}
		}
		gvk = gvks[0]
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.GroupResource()
}
