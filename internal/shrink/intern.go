package shrink

import (
	"hash/maphash"
	"reflect"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Interning replaces each string in a cached object with one canonical copy shared
// by every object of the informer that holds the same text. Objects of one
// workload repeat most of their strings (label keys and values, image names, env
// names and values, mount paths), and a decoder allocates each of them anew for
// every object. Strings are immutable in Go, so sharing them is invisible to
// readers: no in-place change of a cached object can reach another object
// through an interned string. Canonical copies are held weakly by the
// informer's table (sharetable.go): they are freed when no object holds them.
//
// Strings that are unique to one object (its name, uid and resourceVersion, and
// container IDs) are left alone: interning them would only cost a lookup.
//
// Interning alone (without sharing) does not walk an object by reflection: each
// type gets a plan once, the offsets of its string fields and of the pointers,
// slices and maps that lead to more, and the plan is applied through unsafe
// pointers. The reflective walk of sharing (sharer.go), which hashes every value
// to compare parts, cost much more CPU per Pod when used for strings alone
// (BenchmarkIntern; docs/memory.md, "The defaults, measured", has its figures). The
// plan visits the same strings, writes the same fields and nothing else: a
// string field, an element of a slice or a map entry of the object's own, as
// the reflective walk does (TestInternPlanMatchesTheWalk). Interfaces, arrays
// and maps of types without a plan of their own go through the reflective walk.

// interner interns the strings of objects with the canonical copies of its
// table, along their types' plans (plan.go).
type interner struct{ *shareTable }

// internObject interns the strings of obj (a pointer to a typed object, an
// *unstructured.Unstructured or a *metav1.PartialObjectMetadata) in place,
// along its type's plan.
func (t interner) internObject(obj any) { t.internObjectSkipping(obj, 0) }

// internObjectSkipping is internObject but for the top-level fields of skip,
// whose strings are interned already.
func (t interner) internObjectSkipping(obj any, skip Fields) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.objects++
	if u, ok := obj.(*unstructured.Unstructured); ok {
		// Its own map is top: its "metadata" holds the unique keys.
		t.internAnyMap(u.Object, true, false)
		return
	}
	t.internPlanAt(planSkipping(v.Type().Elem(), skip), v.UnsafePointer())
}

// mapWrite is an entry of a map to store again once its walk is done.
type mapWrite struct{ k, v reflect.Value }

// sliceHeader is a slice's representation, whatever its element type.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// internPlanAt applies plan to the value at p, and reports whether a string
// stored in the value itself (not behind a pointer, slice or map) was
// replaced: a caller holding a copy of the value, as of a map value, must
// store it then. Called with t.mu held.
func (t interner) internPlanAt(plan *internPlan, p unsafe.Pointer) bool {
	changed := false
	for i := range plan.ops {
		op := &plan.ops[i]
		q := unsafe.Add(p, op.off)
		switch op.kind {
		case opString:
			changed = t.internAt((*string)(q)) || changed
		case opStruct:
			changed = t.internPlanAt(op.sub, q) || changed
		case opPointer:
			if e := *(*unsafe.Pointer)(q); e != nil {
				t.internPlanAt(op.sub, e)
			}
		case opSlice:
			s := (*sliceHeader)(q)
			for j := range s.len {
				t.internPlanAt(op.sub, unsafe.Add(s.data, uintptr(j)*op.size))
			}
		case opStrings:
			s := *(*[]string)(q)
			for j := range s {
				t.internAt(&s[j])
			}
		case opStringMap:
			m := *(*map[string]string)(q)
			for k, v := range m {
				kc, vc := t.internString(k), t.internString(v)
				if unsafe.StringData(kc) != unsafe.StringData(k) || unsafe.StringData(vc) != unsafe.StringData(v) {
					m[kc] = vc // replaces the key too
				}
			}
		case opResourceList:
			m := *(*corev1.ResourceList)(q)
			for k, v := range m {
				if kc := t.internString(string(k)); unsafe.StringData(kc) != unsafe.StringData(string(k)) {
					m[corev1.ResourceName(kc)] = v
				}
			}
		case opAnyMap:
			t.internAnyMap(*(*map[string]any)(q), false, false)
		case opAny:
			if v, c := t.internAny(*(*any)(q)); c {
				*(*any)(q) = v
				changed = true
			}
		case opMap:
			t.internMap(reflect.NewAt(op.typ, q).Elem(), op.sub)
		case opReflect:
			s := sharer{t: t.shareTable, write: true, trust: true}
			_, c := s.value(reflect.NewAt(op.typ, q).Elem())
			changed = c || changed
		}
	}
	return changed
}

// internString returns the canonical copy of s, which may be s itself.
func (t interner) internString(s string) string {
	if s == "" || len(s) > maxInternLen {
		return s
	}
	return t.internLocked(s, maphash.String(shareSeed, s))
}

// internAt interns the string at p, and reports whether it was replaced.
func (t interner) internAt(p *string) bool {
	s := *p
	c := t.internString(s)
	if unsafe.StringData(c) == unsafe.StringData(s) {
		return false
	}
	*p = c
	return true
}

// internAnyMap interns the keys and values of unstructured content. top is an
// Unstructured's own map, whose "metadata" is meta: its name, uid and
// resourceVersion are unique to the object.
func (t interner) internAnyMap(m map[string]any, top, meta bool) {
	for k, v := range m {
		kc := t.internString(k)
		nv, changed := v, false
		switch x := v.(type) {
		case string:
			if !meta || !uniqueMetaKeys[k] {
				if c := t.internString(x); unsafe.StringData(c) != unsafe.StringData(x) {
					nv, changed = c, true
				}
			}
		case map[string]any:
			t.internAnyMap(x, false, top && k == "metadata")
		default:
			nv, changed = t.internAny(v)
		}
		if changed || unsafe.StringData(kc) != unsafe.StringData(k) {
			m[kc] = nv // replaces the key too
		}
	}
}

// internAny interns what v holds, and returns v or, when v holds a string
// (or a value holding strings) that was replaced, what must replace it.
func (t interner) internAny(v any) (any, bool) {
	switch x := v.(type) {
	case nil, bool, int64, float64, int, int32:
		return v, false
	case string:
		if c := t.internString(x); unsafe.StringData(c) != unsafe.StringData(x) {
			return c, true
		}
		return v, false
	case map[string]any:
		t.internAnyMap(x, false, false)
		return v, false
	case []any:
		for i, e := range x {
			if c, changed := t.internAny(e); changed {
				x[i] = c
			}
		}
		return v, false
	}
	// Anything else, as the reflective walk does: a copy, written and
	// returned if changed.
	rv := reflect.ValueOf(v)
	c := reflect.New(rv.Type()).Elem()
	c.Set(rv)
	s := sharer{t: t.shareTable, write: true, trust: true}
	if _, changed := s.value(c); changed {
		return c.Interface(), true
	}
	return v, false
}

// internMap interns a map's string keys and its values along sub, as the
// reflective walk does: an entry whose key or value changed is stored again.
func (t interner) internMap(m reflect.Value, sub *internPlan) {
	if m.Len() == 0 {
		return
	}
	kt, vt := m.Type().Key(), m.Type().Elem()
	var writes []mapWrite
	iter := m.MapRange()
	for iter.Next() {
		k, val := iter.Key(), iter.Value()
		ks := k.String()
		kc := t.internString(ks)
		nv, changed := val, false
		switch {
		case vt.Kind() == reflect.String:
			vs := val.String()
			if c := t.internString(vs); unsafe.StringData(c) != unsafe.StringData(vs) {
				nv, changed = reflect.ValueOf(c).Convert(vt), true
			}
		case !sub.empty():
			cv := reflect.New(vt)
			cv.Elem().Set(val)
			if t.internPlanAt(sub, cv.UnsafePointer()) {
				nv, changed = cv.Elem(), true
			}
		}
		if changed || unsafe.StringData(kc) != unsafe.StringData(ks) {
			writes = append(writes, mapWrite{k: reflect.ValueOf(kc).Convert(kt), v: nv})
		}
	}
	for _, w := range writes {
		m.SetMapIndex(w.k, w.v)
	}
}
