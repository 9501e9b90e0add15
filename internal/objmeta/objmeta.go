package objmeta

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Unwrap returns the object inside a delete tombstone
// (cache.DeletedFinalStateUnknown, by value or pointer), or obj itself. A nil
// tombstone pointer gives nil.
func Unwrap(obj any) any {
	switch t := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		return t.Obj
	case *cache.DeletedFinalStateUnknown:
		if t == nil {
			return nil
		}
		return t.Obj
	}
	return obj
}

// Of returns the metadata of anything an informer delivers: a typed object,
// an *unstructured.Unstructured, a *metav1.PartialObjectMetadata, or a delete
// tombstone wrapping one of them. It reports false when there is no object to
// read: a tombstone without its object, a nil pointer, or a value that has no
// ObjectMeta.
func Of(obj any) (metav1.Object, bool) {
	obj = Unwrap(obj)
	if obj == nil {
		return nil, false
	}
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	return m, true
}
