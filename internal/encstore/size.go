package encstore

import (
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// sizer estimates how much heap a decoded object holds, for the hot cache's
// budget. Walking an object costs about as much as decoding it, so it walks
// only the first calibrateObjects objects, and from then on estimates from
// the length of an object's codec bytes and the ratio those objects showed.
type sizer struct {
	mu          sync.Mutex
	n           int
	heap, bytes int64
	ratio       float64 // heap bytes per codec byte, once calibrated
}

const calibrateObjects = 32

func (s *sizer) size(obj runtime.Object, rawLen int) int64 {
	s.mu.Lock()
	if s.n >= calibrateObjects {
		r := s.ratio
		s.mu.Unlock()
		return int64(r * float64(rawLen))
	}
	s.mu.Unlock()
	h := heapSize(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n < calibrateObjects {
		s.n++
		s.heap += h
		s.bytes += int64(rawLen)
		if s.bytes > 0 {
			s.ratio = float64(s.heap) / float64(s.bytes)
		}
	}
	return h
}

// heapSize estimates the bytes of heap reachable from obj: pointed-to values,
// strings, slices' arrays and maps' entries, each counted once. Maps are
// counted at their entries' size and a half, roughly what Go's maps take.
func heapSize(obj any) int64 {
	w := sizeWalker{seen: map[uintptr]bool{}}
	v := reflect.ValueOf(obj)
	return w.value(v, true)
}

type sizeWalker struct {
	seen map[uintptr]bool
}

// value returns the heap held by v; self says whether v's own bytes are on
// the heap and not yet counted (a pointer's target) or counted already (a
// field of a struct that was).
func (w *sizeWalker) value(v reflect.Value, self bool) int64 {
	var n int64
	if self {
		n += int64(v.Type().Size())
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || w.seen[v.Pointer()] {
			return n
		}
		w.seen[v.Pointer()] = true
		return n + w.value(v.Elem(), true)
	case reflect.Interface:
		if v.IsNil() {
			return n
		}
		e := v.Elem()
		if e.Kind() == reflect.Pointer {
			return n + w.value(e, false)
		}
		return n + w.value(e, true)
	case reflect.String:
		return n + int64(v.Len())
	case reflect.Slice:
		if v.IsNil() || w.seen[v.Pointer()] {
			return n
		}
		w.seen[v.Pointer()] = true
		n += int64(v.Cap()) * int64(v.Type().Elem().Size())
		for i := range v.Len() {
			n += w.value(v.Index(i), false)
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return n
		}
		kt, et := v.Type().Key(), v.Type().Elem()
		n += int64(float64(v.Len())*1.5*float64(kt.Size()+et.Size())) + 48
		it := v.MapRange()
		for it.Next() {
			n += w.value(it.Key(), false) + w.value(it.Value(), false)
		}
		return n
	case reflect.Struct:
		if v.Type() == timeType {
			return n // a time.Time's location is shared
		}
		for i := range v.NumField() {
			n += w.value(v.Field(i), false)
		}
		return n
	case reflect.Array:
		for i := range v.Len() {
			n += w.value(v.Index(i), false)
		}
		return n
	}
	return n
}

var timeType = reflect.TypeFor[time.Time]()
