package leanstore

import (
	"hash/maphash"
	"reflect"
	"sync"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// pointers. The reflective walk of sharing (share.go), which hashes every value
// to compare parts, cost much more CPU per Pod when used for strings alone
// (BenchmarkIntern; docs/memory.md, "The defaults, measured", has its figures). The
// plan visits the same strings, writes the same fields and nothing else: a
// string field, an element of a slice or a map entry of the object's own, as
// the reflective walk does (TestInternPlanMatchesTheWalk). Interfaces, arrays
// and maps of types without a plan of their own go through the reflective walk.

var (
	objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()
	// maxInternLen bounds the strings worth a table lookup: long strings (certificates,
	// last-applied annotations, config files) are rarely repeated byte for byte.
	maxInternLen = 4096
)

// uniqueFields are string fields whose values are unique to one object.
var uniqueFields = map[string]bool{"ContainerID": true}

// uniqueMetaFields are ObjectMeta fields whose values are unique to one object.
var uniqueMetaFields = map[string]bool{"Name": true, "UID": true, "ResourceVersion": true, "SelfLink": true}

// uniqueMetaKeys are the same fields in an unstructured object's metadata.
var uniqueMetaKeys = map[string]bool{"name": true, "uid": true, "resourceVersion": true, "selfLink": true}

// internObject interns the strings of obj (a pointer to a typed object, an
// *unstructured.Unstructured or a *metav1.PartialObjectMetadata) in place,
// along its type's plan.
func (t *shareTable) internObject(obj any) {
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
	t.internPlanAt(planOf(v.Type().Elem()), v.UnsafePointer())
}

// internPlan is what interning visits in a value of one type: ops at offsets
// from the value's address. A type without strings to intern has no ops.
type internPlan struct {
	ops []internOp
	// building is true while the plan of a recursive type is compiled.
	building bool
}

type internOp struct {
	kind internOpKind
	off  uintptr
	sub  *internPlan  // the plan of the target, element or map value
	size uintptr      // opSlice: the element's size
	typ  reflect.Type // opMap, opReflect: the value's type
}

type internOpKind uint8

const (
	opString       internOpKind = iota // a string (of any string type)
	opStruct                           // a struct whose plan was still being built: sub at off
	opPointer                          // a pointer: sub at its target
	opSlice                            // a slice: sub at each element
	opStrings                          // a slice of strings
	opStringMap                        // a map[string]string
	opResourceList                     // a corev1.ResourceList: its keys
	opAnyMap                           // a map[string]any (unstructured content)
	opAny                              // an any
	opMap                              // another map with string keys, by reflection
	opReflect                          // an interface or an array: the reflective walk
)

var (
	planCache sync.Map // reflect.Type -> *internPlan
	planMu    sync.Mutex

	stringMapType    = reflect.TypeFor[map[string]string]()
	resourceListType = reflect.TypeFor[corev1.ResourceList]()
	anyMapType       = reflect.TypeFor[map[string]any]()
	anyType          = reflect.TypeFor[any]()
)

// planOf returns typ's plan, compiled at its first use.
func planOf(typ reflect.Type) *internPlan {
	if p, ok := planCache.Load(typ); ok {
		return p.(*internPlan)
	}
	planMu.Lock()
	defer planMu.Unlock()
	if p, ok := planCache.Load(typ); ok {
		return p.(*internPlan)
	}
	built := map[reflect.Type]*internPlan{}
	p := compilePlan(typ, built)
	for t, bp := range built {
		planCache.Store(t, bp)
	}
	return p
}

// compilePlan compiles typ's plan, and those of the types it leads to, into
// built. A struct's plan is in built while its fields are compiled, so that a
// recursive type (a JSON schema holding schemas) refers to it.
func compilePlan(typ reflect.Type, built map[reflect.Type]*internPlan) *internPlan {
	if p, ok := built[typ]; ok {
		return p
	}
	if p, ok := planCache.Load(typ); ok {
		return p.(*internPlan)
	}
	p := &internPlan{}
	built[typ] = p
	at := func(k internOpKind) { p.ops = []internOp{{kind: k, typ: typ}} }
	switch typ.Kind() {
	case reflect.String:
		at(opString)
	case reflect.Pointer:
		if sub := compilePlan(typ.Elem(), built); !sub.empty() {
			p.ops = []internOp{{kind: opPointer, sub: sub}}
		}
	case reflect.Slice:
		switch elem := typ.Elem(); {
		case elem.Kind() == reflect.Uint8:
			// bytes: not strings
		case elem.Kind() == reflect.String:
			at(opStrings)
		default:
			if sub := compilePlan(elem, built); !sub.empty() {
				p.ops = []internOp{{kind: opSlice, sub: sub, size: elem.Size()}}
			}
		}
	case reflect.Map:
		switch {
		case typ.Key().Kind() != reflect.String:
			// The reflective walk leaves maps without string keys alone.
		case typ == stringMapType:
			at(opStringMap)
		case typ == resourceListType:
			at(opResourceList)
		case typ == anyMapType:
			at(opAnyMap)
		default:
			p.ops = []internOp{{kind: opMap, typ: typ, sub: compilePlan(typ.Elem(), built)}}
		}
	case reflect.Interface:
		if typ == anyType {
			at(opAny)
		} else {
			at(opReflect)
		}
	case reflect.Array:
		if sub := compilePlan(typ.Elem(), built); !sub.empty() {
			at(opReflect)
		}
	case reflect.Struct:
		p.building = true
		p.ops = structOps(typ, built)
		p.building = false
	}
	return p
}

// structOps are the ops of a struct's fields: a field's own ops moved to its
// offset, or an opStruct for a struct whose plan is still being built.
func structOps(typ reflect.Type, built map[reflect.Type]*internPlan) []internOp {
	if typ == timeType || typ == quantityType {
		return nil // no strings the reflective walk interns
	}
	meta := typ == objectMetaType
	var ops []internOp
	for i := range typ.NumField() {
		sf := typ.Field(i)
		if !sf.IsExported() && !sf.Anonymous {
			continue // the reflective walk cannot set what it reaches through these
		}
		if sf.Type.Kind() == reflect.String && ((meta && uniqueMetaFields[sf.Name]) || uniqueFields[sf.Name]) {
			continue
		}
		sub := compilePlan(sf.Type, built)
		if sub.building {
			ops = append(ops, internOp{kind: opStruct, off: sf.Offset, sub: sub})
			continue
		}
		for _, op := range sub.ops {
			op.off += sf.Offset
			ops = append(ops, op)
		}
	}
	return ops
}

// empty reports whether a plan visits nothing. A plan still being built is
// taken as not empty.
func (p *internPlan) empty() bool { return !p.building && len(p.ops) == 0 }

// sliceHeader is a slice's representation, whatever its element type.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// internPlanAt applies plan to the value at p, and reports whether a string
// stored in the value itself (not behind a pointer, slice or map) was
// replaced: a caller holding a copy of the value, as of a map value, must
// store it then. Called with t.mu held.
func (t *shareTable) internPlanAt(plan *internPlan, p unsafe.Pointer) bool {
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
			s := sharer{t: t, write: true, trust: true}
			_, c := s.value(reflect.NewAt(op.typ, q).Elem())
			changed = c || changed
		}
	}
	return changed
}

// internString returns the canonical copy of s, which may be s itself.
func (t *shareTable) internString(s string) string {
	if s == "" || len(s) > maxInternLen {
		return s
	}
	return t.internLocked(s, maphash.String(shareSeed, s))
}

// internAt interns the string at p, and reports whether it was replaced.
func (t *shareTable) internAt(p *string) bool {
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
func (t *shareTable) internAnyMap(m map[string]any, top, meta bool) {
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
func (t *shareTable) internAny(v any) (any, bool) {
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
	s := sharer{t: t, write: true, trust: true}
	if _, changed := s.value(c); changed {
		return c.Interface(), true
	}
	return v, false
}

// internMap interns a map's string keys and its values along sub, as the
// reflective walk does: an entry whose key or value changed is stored again.
func (t *shareTable) internMap(m reflect.Value, sub *internPlan) {
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
