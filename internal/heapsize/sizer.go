// Package heapsize estimates the heap a set of Go objects holds: every
// allocation they reference, rounded up to Go's size classes, with what
// several sampled objects share (an interned string, a shared part) counted
// once. leanstore's Census and EstimateBytesPerObject size a sample of an
// informer's objects with it.
package heapsize

import (
	"math/bits"
	"reflect"
	"unsafe"
)

// Sizer sums the allocations reachable from a sample of objects. It records, for
// each allocation, how many sampled objects reach it: an allocation reached from
// one sampled object stands for one per object of the whole store, while one
// reached from several is shared (an interned string, a shared part) and exists
// once, however many objects hold it.
type Sizer struct {
	allocs map[uintptr]*alloc
	sample int   // index of the object being walked, from 1
	own    int64 // allocations that could not be identified, counted per object
}

type alloc struct {
	size       int64
	objects    int
	lastSample int
}

// NewSizer returns a sizer with no object walked yet.
func NewSizer() *Sizer { return &Sizer{allocs: map[uintptr]*alloc{}} }

// Object walks one sampled object.
func (s *Sizer) Object(obj any) {
	s.sample++
	s.add(reflect.ValueOf(&obj).Elem())
}

// PerObject estimates the bytes per object of a store of n objects like the
// sample.
func (s *Sizer) PerObject(n int) float64 {
	if s.sample == 0 || n == 0 {
		return 0
	}
	own, shared := float64(s.own), 0.0
	for _, a := range s.allocs {
		if a.objects > 1 {
			shared += float64(a.size)
		} else {
			own += float64(a.size)
		}
	}
	return own/float64(s.sample) + shared/float64(max(n, s.sample))
}

// add counts what v references (not v's own inline bytes).
func (s *Sizer) add(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || s.visit(v.Pointer(), roundAlloc(v.Type().Elem().Size(), hasPointers(v.Type().Elem()))) {
			return
		}
		s.inline(v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		e := v.Elem()
		switch e.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
			s.add(e) // pointer-shaped: stored in the interface word itself
		case reflect.Bool:
		default:
			// Other values are boxed in their own allocation, which the
			// interface's data word points at.
			size := roundAlloc(e.Type().Size(), hasPointers(e.Type()))
			if v.CanAddr() {
				box := (*[2]uintptr)(v.Addr().UnsafePointer())[1]
				if s.visit(box, size) {
					return
				}
			} else {
				s.own += size // a map value: its box cannot be told apart
			}
			s.inline(e)
		}
	case reflect.String:
		if v.Len() == 0 {
			return
		}
		p := uintptr(unsafe.Pointer(unsafe.StringData(v.String())))
		size := int64(v.Len()) // the tiny allocator packs short strings together
		if v.Len() >= 16 {
			size = roundAlloc(uintptr(v.Len()), false)
		}
		s.visit(p, size)
	case reflect.Slice:
		et := v.Type().Elem()
		if v.IsNil() || v.Cap() == 0 || s.visit(v.Pointer(), roundAlloc(uintptr(v.Cap())*et.Size(), hasPointers(et))) {
			return
		}
		for j := range v.Len() {
			s.inline(v.Index(j))
		}
	case reflect.Map:
		if v.IsNil() || s.visit(v.Pointer(), mapBytes(v)) {
			return
		}
		iter := v.MapRange()
		for iter.Next() {
			s.inline(iter.Key())
			s.inline(iter.Value())
		}
	case reflect.Struct, reflect.Array:
		s.inline(v)
	}
}

// inline counts what the fields or elements of an inline value reference.
func (s *Sizer) inline(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for j := range v.NumField() {
			s.add(v.Field(j))
		}
	case reflect.Array:
		for j := range v.Len() {
			s.add(v.Index(j))
		}
	case reflect.Pointer, reflect.Interface, reflect.String, reflect.Slice, reflect.Map:
		s.add(v)
	}
}

// visit records that the current object reaches the allocation at p of size
// bytes and reports whether the walk already went below p for this object.
func (s *Sizer) visit(p uintptr, size int64) bool {
	a := s.allocs[p]
	if a == nil {
		s.allocs[p] = &alloc{size: size, objects: 1, lastSample: s.sample}
		return false
	}
	if a.lastSample == s.sample {
		return true
	}
	a.lastSample = s.sample
	a.objects++
	return false
}

// mapBytes approximates a Go (swiss table) map's allocation: groups of 8 slots
// with a control word, at most 7/8 full, plus the map header and a directory.
func mapBytes(v reflect.Value) int64 {
	kt, vt := v.Type().Key(), v.Type().Elem()
	slot := kt.Size() + vt.Size()
	n := uintptr(v.Len())
	if n <= 8 {
		return roundAlloc(48, true) + roundAlloc(8+8*slot, true)
	}
	slots := uintptr(1) << bits.Len(uint((n*8/7)-1))
	groups := slots / 8
	return roundAlloc(48, true) + roundAlloc(groups*(8+8*slot), true) + 64
}

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}

// sizeClasses are Go's small allocation size classes (runtime/sizeclasses.go).
var sizeClasses = []uintptr{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792,
	2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240,
	10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// roundAlloc is the heap an allocation of n bytes takes.
func roundAlloc(n uintptr, pointers bool) int64 {
	if n == 0 {
		return 0
	}
	if n < 16 && !pointers {
		return int64(n)
	}
	if n > 32768 {
		return int64((n + 8191) &^ 8191)
	}
	lo, hi := 0, len(sizeClasses)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if sizeClasses[mid] >= n {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return int64(sizeClasses[lo])
}
