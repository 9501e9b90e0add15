package bench

import (
	"fmt"
	"reflect"
	"syscall"
	"unsafe"
)

// The measurement's own records (heap samples every few milliseconds, probe
// wake-ups every millisecond, the events phase's latencies) live outside the
// Go heap, in anonymous memory mappings: kept on the heap, they would grow it
// by tens of kilobytes a second, which for a cache of a few MiB is a visible
// part of the live heap and of every peak measured after it, and would change
// the garbage collector's pacing of the process being measured. The mappings
// count in the RSS (only the pages written), never in
// /memory/classes/heap/objects:bytes.

// offHeap returns a zeroed slice of n values of T in a memory mapping of its
// own. T must hold no pointers: the garbage collector does not scan the
// mapping. Free it with freeOffHeap.
func offHeap[T any](n int) ([]T, error) {
	t := reflect.TypeFor[T]()
	if !pointerFree(t) {
		return nil, fmt.Errorf("%s holds pointers: it cannot live outside the Go heap", t)
	}
	if n <= 0 {
		return nil, nil
	}
	size := int(t.Size()) * n
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes for %d values of %s: %w", size, n, t, err)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n), nil
}

// freeOffHeap unmaps a slice offHeap returned (its whole capacity). The
// slice, and any slice of it, must not be used afterwards.
func freeOffHeap[T any](s []T) error {
	if cap(s) == 0 {
		return nil
	}
	size := int(reflect.TypeFor[T]().Size()) * cap(s)
	return syscall.Munmap(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s[:cap(s)]))), size))
}

// pointerFree reports whether values of t hold no pointers the garbage
// collector would have to see.
func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return t.Len() == 0 || pointerFree(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}
