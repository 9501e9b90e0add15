package bench

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// lastApplied is kubectl's client-side apply annotation, often the largest
// annotation on an object.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// StripManagedFields is the transform a controller author writes with plain
// client-go: it drops metadata.managedFields. It accepts its own output, as
// client-go requires under streaming lists (the transform runs twice there).
func StripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// StripManagedFieldsAndLastApplied also drops the last-applied annotation.
func StripManagedFieldsAndLastApplied(obj any) (any, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil // e.g. cache.DeletedFinalStateUnknown: leave it alone
	}
	m.SetManagedFields(nil)
	if ann := m.GetAnnotations(); ann != nil {
		if _, ok := ann[lastApplied]; ok {
			delete(ann, lastApplied)
			if len(ann) == 0 {
				ann = nil
			}
			m.SetAnnotations(ann)
		}
	}
	return obj, nil
}

var (
	_ cache.TransformFunc = StripManagedFields
	_ cache.TransformFunc = StripManagedFieldsAndLastApplied
)
