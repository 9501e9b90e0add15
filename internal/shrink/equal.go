package shrink

import (
	"reflect"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// equalValues reports whether a and b, of one type, are deeply equal, as
// reflect.DeepEqual does, for values without cycles: objects decoded from the
// API server are trees, whose shared parts (after sharing) make at most a
// DAG. DeepEqual records every pair of slices, maps and pointers it compares
// in a map, to stop on cycles; that map was most of what comparing a part
// with its canonical candidate allocated and a good share of its time. Parts
// at the same address are equal without being read, which is the common case
// here: the children of a part are made canonical before it is compared.
//
// Values in memory (addressable ones) are compared along their type's plan
// (equalplan.go), without reflect.Value.
func equalValues(a, b reflect.Value) bool {
	if a.CanAddr() && b.CanAddr() {
		return eqPlanOf(a.Type()).equal(a.Addr().UnsafePointer(), b.Addr().UnsafePointer())
	}
	return equalReflect(a, b)
}

// equalReflect is equalValues through reflect.Value, for values a plan cannot
// reach (maps, interfaces) or that are not in addressable memory.
func equalReflect(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		if a.UnsafePointer() == b.UnsafePointer() {
			return true
		}
		if a.Type().Elem().Kind() == reflect.Uint8 {
			return string(a.Bytes()) == string(b.Bytes())
		}
		for i := range a.Len() {
			if !equalValues(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Array:
		for i := range a.Len() {
			if !equalValues(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		if a.UnsafePointer() == b.UnsafePointer() {
			return true
		}
		if a.Type() == resourceListType {
			ap, bp := a.UnsafePointer(), b.UnsafePointer()
			return equalResourceLists(*(*corev1.ResourceList)(unsafe.Pointer(&ap)), *(*corev1.ResourceList)(unsafe.Pointer(&bp)), eqPlanOf(quantityType))
		}
		if a.Type() == stringMapType {
			ap, bp := a.UnsafePointer(), b.UnsafePointer() // a map is its header's pointer
			am, bm := *(*map[string]string)(unsafe.Pointer(&ap)), *(*map[string]string)(unsafe.Pointer(&bp))
			for k, v := range am {
				if w, ok := bm[k]; !ok || w != v {
					return false
				}
			}
			return true
		}
		iter := a.MapRange()
		if !a.CanInterface() { // read through an unexported field: entries copied out
			for iter.Next() {
				bv := b.MapIndex(iter.Key())
				if !bv.IsValid() || !equalValues(iter.Value(), bv) {
					return false
				}
			}
			return true
		}
		k, v := reflect.New(a.Type().Key()).Elem(), reflect.New(a.Type().Elem()).Elem()
		for iter.Next() {
			k.SetIterKey(iter)
			v.SetIterValue(iter)
			bv := b.MapIndex(k)
			if !bv.IsValid() || !equalValues(v, bv) {
				return false
			}
		}
		return true
	case reflect.Pointer:
		if a.UnsafePointer() == b.UnsafePointer() {
			return true
		}
		if a.IsNil() || b.IsNil() {
			return false
		}
		return equalValues(a.Elem(), b.Elem())
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		ae, be := a.Elem(), b.Elem()
		return ae.Type() == be.Type() && equalValues(ae, be)
	case reflect.Struct:
		for i := range a.NumField() {
			if !equalValues(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	case reflect.Complex64, reflect.Complex128:
		return a.Complex() == b.Complex()
	case reflect.Func:
		return a.IsNil() && b.IsNil()
	}
	return a.UnsafePointer() == b.UnsafePointer() // channels, unsafe pointers: never in API objects
}
