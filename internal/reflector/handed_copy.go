package reflector

import (
	"maps"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// metaCopy returns a copy of obj whose metadata can be changed without
// changing obj: a copy of the object's top level only, sharing everything
// below it (spec, status, and the slices and maps of its metadata) with obj.
// A re-list hands the reflector a DELETED event for every object that went
// away with the list's resourceVersion set on it (see deletedAt); after a
// shard rebalance that is a third of the cache or more, and a deep copy of each
// was a second copy of everything that moved away, alive at once: the heap
// peak of the rebalance (measured with cachebench shard --heap-profiles: most
// of what a replica allocated in a rebalance).
//
// Handed objects are never changed in place, so the shared parts stay as they
// are. An object whose metadata the top-level copy would still share (its
// ObjectMeta held by pointer, say) is deep-copied instead.
func metaCopy(obj runtime.Object) runtime.Object {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		c := &unstructured.Unstructured{Object: maps.Clone(u.Object)}
		if md, ok := u.Object["metadata"].(map[string]any); ok {
			c.Object["metadata"] = maps.Clone(md)
		}
		return c
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return obj.DeepCopyObject()
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	c, ok := cp.Interface().(runtime.Object)
	if !ok {
		return obj.DeepCopyObject()
	}
	om, err1 := meta.Accessor(obj)
	cm, err2 := meta.Accessor(c)
	if err1 != nil || err2 != nil || sameMeta(om, cm) {
		return obj.DeepCopyObject()
	}
	return c
}

// sameMeta reports whether two metadata accessors reach the same value.
func sameMeta(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer && va.Pointer() == vb.Pointer()
}
