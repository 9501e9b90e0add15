package shrink

import (
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// internPlan is what interning (intern.go) visits in a value of one type: ops at offsets
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
	internPlans typePlans[internPlan]

	resourceListType = reflect.TypeFor[corev1.ResourceList]()
	anyMapType       = reflect.TypeFor[map[string]any]()
	anyType          = reflect.TypeFor[any]()
)

// planOf returns typ's plan, compiled at its first use.
func planOf(typ reflect.Type) *internPlan { return internPlans.of(typ, compilePlan) }

// typePlans caches plans of one kind (interning's, comparison's) by type,
// each compiled once under a lock. A compile function adds to built the plans
// of the types it leads to, which are cached with it.
type typePlans[P any] struct {
	cache sync.Map // reflect.Type -> *P
	mu    sync.Mutex
}

func (c *typePlans[P]) of(typ reflect.Type, compile func(reflect.Type, map[reflect.Type]*P) *P) *P {
	if p, ok := c.cached(typ); ok {
		return p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.cached(typ); ok {
		return p
	}
	built := map[reflect.Type]*P{}
	p := compile(typ, built)
	for t, bp := range built {
		c.cache.Store(t, bp)
	}
	return p
}

// known returns typ's plan if it is being compiled (in built) or was
// compiled already.
func (c *typePlans[P]) known(typ reflect.Type, built map[reflect.Type]*P) (*P, bool) {
	if p, ok := built[typ]; ok {
		return p, true
	}
	return c.cached(typ)
}

// cached returns typ's plan if it was compiled already.
func (c *typePlans[P]) cached(typ reflect.Type) (*P, bool) {
	p, ok := c.cache.Load(typ)
	if !ok {
		return nil, false
	}
	return p.(*P), true
}

// compilePlan compiles typ's plan, and those of the types it leads to, into
// built. A struct's plan is in built while its fields are compiled, so that a
// recursive type (a JSON schema holding schemas) refers to it.
func compilePlan(typ reflect.Type, built map[reflect.Type]*internPlan) *internPlan {
	if p, ok := internPlans.known(typ, built); ok {
		return p
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

// Fields is a set of the top-level struct fields of an object, by index
// (bit i for field i): fields a new version took from the version the cache
// holds, already interned there (Pipeline.ApplyTaken).
type Fields uint64

// skipKey names a plan of a type without some of its fields.
type skipKey struct {
	typ  reflect.Type
	skip Fields
}

var skippingPlans sync.Map // skipKey -> *internPlan

// planSkipping is typ's plan (a struct's) without the ops inside the fields
// of skip, built once per type and set.
func planSkipping(typ reflect.Type, skip Fields) *internPlan {
	full := planOf(typ)
	if skip == 0 || typ.Kind() != reflect.Struct {
		return full
	}
	key := skipKey{typ, skip}
	if p, ok := skippingPlans.Load(key); ok {
		return p.(*internPlan)
	}
	inSkipped := func(off uintptr) bool {
		for i := range min(typ.NumField(), 64) {
			if skip&(1<<i) == 0 {
				continue
			}
			f := typ.Field(i)
			if off >= f.Offset && off < f.Offset+f.Type.Size() {
				return true
			}
		}
		return false
	}
	p := &internPlan{}
	for _, op := range full.ops {
		if !inSkipped(op.off) {
			p.ops = append(p.ops, op)
		}
	}
	skippingPlans.Store(key, p)
	return p
}
