package shrink

import (
	"reflect"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// eqPlan compares two values of one type in memory, along a plan of the
// type's fields compiled once, for equalValues: a Pod's spec compared field by
// field through reflect.Value cost more than walking it (the Field calls
// alone were a third). A plan gives the same answer as the reflective
// comparison, except that scalars are compared as bytes: -0 and +0 differ, and
// NaNs with the same bits are equal, which can only miss or allow sharing of
// values that encode alike.
type eqPlan struct {
	ops []eqOp
}

type eqOp struct {
	kind eqOpKind
	off  uintptr
	size uintptr      // eqBytes: bytes to compare; eqSlice: the element's size
	sub  *eqPlan      // eqPointer, eqSlice: the target's or element's plan
	typ  reflect.Type // eqReflect: the value's type
}

type eqOpKind uint8

const (
	eqBytes        eqOpKind = iota // scalars: compared as bytes
	eqString                       // a string (of any string type)
	eqPointer                      // a pointer: equal addresses, or sub at the targets
	eqSlice                        // a slice: lengths, then equal arrays or sub at each element
	eqByteSlice                    // a []byte (of any byte type)
	eqStringMap                    // a map[string]string
	eqResourceList                 // a corev1.ResourceList: sub at each Quantity
	eqReflect                      // anything else (maps, interfaces, arrays): equalReflect
)

var eqPlans typePlans[eqPlan]

// eqPlanOf returns typ's plan, compiled at its first use.
func eqPlanOf(typ reflect.Type) *eqPlan { return eqPlans.of(typ, compileEqPlan) }

// compileEqPlan compiles typ's plan, and those of the types it leads to, into
// built.
func compileEqPlan(typ reflect.Type, built map[reflect.Type]*eqPlan) *eqPlan {
	if p, ok := eqPlans.known(typ, built); ok {
		return p
	}
	p := &eqPlan{}
	built[typ] = p // before its ops: a recursive type's pointers refer to it
	p.ops = eqOps(typ, 0, built)
	return p
}

// eqOps are the ops comparing a value of typ at offset off.
func eqOps(typ reflect.Type, off uintptr, built map[reflect.Type]*eqPlan) []eqOp {
	switch typ.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return []eqOp{{kind: eqBytes, off: off, size: typ.Size()}}
	case reflect.String:
		return []eqOp{{kind: eqString, off: off}}
	case reflect.Pointer:
		return []eqOp{{kind: eqPointer, off: off, sub: compileEqPlan(typ.Elem(), built)}}
	case reflect.Slice:
		switch elem := typ.Elem(); elem.Kind() {
		case reflect.Uint8:
			return []eqOp{{kind: eqByteSlice, off: off}}
		default:
			return []eqOp{{kind: eqSlice, off: off, size: elem.Size(), sub: compileEqPlan(elem, built)}}
		}
	case reflect.Map:
		switch typ {
		case stringMapType:
			return []eqOp{{kind: eqStringMap, off: off}}
		case resourceListType:
			return []eqOp{{kind: eqResourceList, off: off, sub: compileEqPlan(quantityType, built)}}
		}
	case reflect.Struct:
		// A struct's fields are inlined: a type holds itself only behind
		// a pointer or a slice, whose plan is compiled (or being compiled)
		// once.
		var ops []eqOp
		for i := range typ.NumField() {
			sf := typ.Field(i)
			for _, op := range eqOps(sf.Type, off+sf.Offset, built) {
				// Adjacent scalars are one comparison of their bytes, but
				// not across padding, which is not part of either value.
				if n := len(ops); n > 0 && op.kind == eqBytes && ops[n-1].kind == eqBytes && ops[n-1].off+ops[n-1].size == op.off {
					ops[n-1].size += op.size
					continue
				}
				ops = append(ops, op)
			}
		}
		return ops
	}
	return []eqOp{{kind: eqReflect, off: off, typ: typ}}
}

// equal reports whether the values at a and b are equal.
func (p *eqPlan) equal(a, b unsafe.Pointer) bool {
	if a == b {
		return true
	}
	for i := range p.ops {
		op := &p.ops[i]
		x, y := unsafe.Add(a, op.off), unsafe.Add(b, op.off)
		switch op.kind {
		case eqBytes:
			if unsafe.String((*byte)(x), op.size) != unsafe.String((*byte)(y), op.size) {
				return false
			}
		case eqString:
			if *(*string)(x) != *(*string)(y) {
				return false
			}
		case eqPointer:
			px, py := *(*unsafe.Pointer)(x), *(*unsafe.Pointer)(y)
			if px != py && (px == nil || py == nil || !op.sub.equal(px, py)) {
				return false
			}
		case eqSlice:
			sx, sy := (*sliceHeader)(x), (*sliceHeader)(y)
			if sx.len != sy.len || (sx.data == nil) != (sy.data == nil) {
				return false
			}
			if sx.data == sy.data {
				continue
			}
			for j := range uintptr(sx.len) {
				if !op.sub.equal(unsafe.Add(sx.data, j*op.size), unsafe.Add(sy.data, j*op.size)) {
					return false
				}
			}
		case eqByteSlice:
			sx, sy := (*sliceHeader)(x), (*sliceHeader)(y)
			if sx.len != sy.len || (sx.data == nil) != (sy.data == nil) ||
				unsafe.String((*byte)(sx.data), sx.len) != unsafe.String((*byte)(sy.data), sy.len) {
				return false
			}
		case eqStringMap:
			if !equalStringMaps(*(*map[string]string)(x), *(*map[string]string)(y)) {
				return false
			}
		case eqResourceList:
			if !equalResourceLists(*(*corev1.ResourceList)(x), *(*corev1.ResourceList)(y), op.sub) {
				return false
			}
		case eqReflect:
			if !equalReflect(reflect.NewAt(op.typ, x).Elem(), reflect.NewAt(op.typ, y).Elem()) {
				return false
			}
		}
	}
	return true
}

// equalStringMaps compares two map[string]string as equalValues does: nil
// and empty differ.
func equalStringMaps(a, b map[string]string) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// equalResourceLists compares two resource lists as equalValues does, each
// Quantity along q, its plan: through reflect.Value, every value read from the
// second map was a copy on the heap (MapIndex), a sixth of what sharing's
// walk of a typed Pod allocated. A Quantity's plan is of bytes, strings and a
// pointer, which equalFlat compares without taking the copies' addresses
// out of this frame.
func equalResourceLists(a, b corev1.ResourceList, q *eqPlan) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok {
			return false
		}
		equal, sure := q.equalFlat(unsafe.Pointer(&x), unsafe.Pointer(&y))
		if !sure {
			xc, yc := x, y // only here on the heap: q.equal may keep its arguments
			equal = q.equal(unsafe.Pointer(&xc), unsafe.Pointer(&yc))
		}
		if !equal {
			return false
		}
	}
	return true
}

// equalFlat is equal for a plan whose ops read only the values' own memory
// and what their pointers lead to; sure is false when p has another op, for
// which the caller must call equal. It does not recurse into itself, so the
// values at a and b may be locals of the caller's frame. Its three cases are
// equal's, written again: equal calling them through a function would pay a
// call per op on the walk's hottest path, and equal's own recursion is what
// sends its arguments to the heap.
func (p *eqPlan) equalFlat(a, b unsafe.Pointer) (equal, sure bool) {
	for i := range p.ops {
		op := &p.ops[i]
		x, y := unsafe.Add(a, op.off), unsafe.Add(b, op.off)
		switch op.kind {
		case eqBytes:
			if unsafe.String((*byte)(x), op.size) != unsafe.String((*byte)(y), op.size) {
				return false, true
			}
		case eqString:
			if *(*string)(x) != *(*string)(y) {
				return false, true
			}
		case eqPointer:
			px, py := *(*unsafe.Pointer)(x), *(*unsafe.Pointer)(y)
			if px != py && (px == nil || py == nil || !op.sub.equal(px, py)) {
				return false, true
			}
		default:
			return false, false
		}
	}
	return true, true
}
