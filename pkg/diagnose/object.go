package diagnose

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// ObjectRef names the object a finding is about.
type ObjectRef struct {
	Namespace string
	Name      string
	// UID tells a re-created object from the one before it.
	UID types.UID
}

// String is "namespace/name", or "name" for cluster-scoped objects.
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

func refOf(m metav1.Object) ObjectRef {
	return ObjectRef{Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID()}
}

// unwrap returns the object inside a delete tombstone, or obj itself.
func unwrap(obj any) any {
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

// objectOf returns the metadata of anything an informer delivers (typed,
// unstructured, PartialObjectMetadata, or a tombstone wrapping one), or false
// when there is no object to read.
func objectOf(obj any) (metav1.Object, bool) {
	obj = unwrap(obj)
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
