package reflector

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// bookmarkObject returns a bookmark object at rv, of the type of the listed objects (or
// the informer's example), which the reflector accepts in a watch.
func bookmarkObject(example runtime.Object, rv string, items []runtime.Object) (runtime.Object, bool) {
	like := example
	if len(items) > 0 {
		if _, isRecord := items[0].(*Record); !isRecord {
			like = items[0]
		}
	}
	if like == nil || reflect.TypeOf(like).Kind() != reflect.Pointer {
		return nil, false
	}
	obj, ok := reflect.New(reflect.TypeOf(like).Elem()).Interface().(runtime.Object)
	if !ok {
		return nil, false
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetGroupVersionKind(like.GetObjectKind().GroupVersionKind())
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	m.SetResourceVersion(rv)
	return obj, true
}
