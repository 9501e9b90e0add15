package leanstore

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// keep returns the object to store for obj: the handed object when it has the
// same uid and resourceVersion, otherwise obj stripped. copyOut makes a private
// copy of obj first when it lives inside a list's item array, so that the array
// can be freed. It returns nil, and no error, for an object of another shard.
// reuse false never returns the handed object (see reuses).
func (lw *listWatch) keep(obj runtime.Object, copyOut, reuse bool) (runtime.Object, bool, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %T has no metadata: %w", lw.gr(), obj, err)
	}
	// Sharding (shard.go): another shard's object is dropped before stripping.
	if !lw.shard.owns(obj) {
		return nil, false, nil
	}
	if old, ok := lw.handed.Get(m.GetNamespace(), m.GetName()); ok && reuse {
		if om, err := meta.Accessor(old); err == nil && om.GetUID() == m.GetUID() && om.GetResourceVersion() == m.GetResourceVersion() {
			return old, true, nil
		}
	}
	if copyOut {
		obj = shallowCopy(obj)
	}
	out, err := lw.strip.Apply(obj, lw.gr())
	if err != nil {
		return nil, false, err
	}
	o, ok := out.(runtime.Object)
	if !ok {
		return nil, false, fmt.Errorf("%s: transform returned %T, not a runtime.Object", lw.gr(), out)
	}
	return o, false, nil
}

// shallowCopy moves a list item into its own allocation. It shares every field
// with the original, which is fine: the list is dropped right after.
func shallowCopy(obj runtime.Object) runtime.Object {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer {
		return obj
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	return c.Interface().(runtime.Object)
}

// listResult is a complete list, ready for the reflector.
type listResult struct {
	items  []runtime.Object
	rv     string
	reused int
}
