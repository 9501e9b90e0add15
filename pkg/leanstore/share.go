package leanstore

import (
	"hash/maphash"
	"math"
	"reflect"
	"sync"
	"unsafe"
	"weak"
)

// Sharing (WithSharing) makes cached objects share equal parts: the containers,
// volumes, env lists, resource maps, probes and owner references that the Pods of
// one workload repeat byte for byte. Each object is walked once, children before
// parents; every slice, map and pointer gets a content hash and, when an equal
// value is already held by a cached object, is replaced by that value. Children are
// made canonical first, so an equal parent compares cheaply (its children are the
// same pointers).
//
// The table of canonical values holds weak pointers: a value shared by no cached
// object any more is freed by the garbage collector as usual. A value enters the
// table only the second time its hash is seen, so the many values that are unique
// to one object (its status, its IPs) cost no table entry.
//
// Cached objects are read-only by client-go's rules. With sharing, code that breaks
// that rule and changes a cached object in place changes every object sharing the
// part it changed; client-go's KUBE_CACHE_MUTATION_DETECTOR=true finds such code.

var shareSeed = maphash.MakeSeed()

type shareKey struct {
	t reflect.Type
	h uint64
}

type shareEntry struct {
	p weak.Pointer[byte]
	n int // slice length; -1 for maps and pointers
}

// shareTable is process-wide, like the unique package: equal values are shared
// across informers and factories.
var shareTable = struct {
	sync.Mutex
	m       map[shareKey][]shareEntry
	seen    [1 << 16]uint64 // hashes seen once, direct-mapped: admission to m
	inserts int
}{m: map[shareKey][]shareEntry{}}

// shareValues makes obj's parts canonical, in place, and interns its strings.
// obj is a pointer to a typed object or to an unstructured object.
func shareValues(obj interface{}) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	var s sharer
	s.value(v.Elem(), false)
}

type sharer struct{}

// value canonicalizes v (addressable when v.CanSet) and returns its content hash.
func (s *sharer) value(v reflect.Value, inMeta bool) uint64 {
	switch v.Kind() {
	case reflect.String:
		str := v.String()
		if v.CanSet() && str != "" {
			v.SetString(intern(str))
		}
		return maphash.String(shareSeed, str)
	case reflect.Bool:
		if v.Bool() {
			return 1
		}
		return 2
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return mix(uint64(v.Int()), 3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return mix(v.Uint(), 5)
	case reflect.Float32, reflect.Float64:
		return mix(math.Float64bits(v.Float()), 7)
	case reflect.Struct:
		return s.structValue(v)
	case reflect.Pointer:
		if v.IsNil() {
			return 11
		}
		h := mix(s.value(v.Elem(), false), 13)
		if v.CanSet() {
			s.share(v, h, -1)
		}
		return h
	case reflect.Slice:
		if v.IsNil() {
			return 17
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return maphash.Bytes(shareSeed, v.Bytes())
		}
		h := mix(uint64(v.Len()), 19)
		for i := range v.Len() {
			h = mix(h, s.value(v.Index(i), false))
		}
		if v.CanSet() && v.Len() > 0 {
			s.share(v, h, v.Len())
		}
		return h
	case reflect.Map:
		if v.IsNil() {
			return 23
		}
		h := s.mapValue(v)
		if v.CanSet() {
			s.share(v, h, -1)
		}
		return h
	case reflect.Interface:
		if v.IsNil() {
			return 29
		}
		e := v.Elem()
		if !v.CanSet() {
			return s.value(e, false)
		}
		c := reflect.New(e.Type()).Elem()
		c.Set(e)
		h := s.value(c, false)
		v.Set(c)
		return h
	case reflect.Array:
		h := uint64(31)
		for i := range v.Len() {
			h = mix(h, s.value(v.Index(i), false))
		}
		return h
	}
	return 37
}

func (s *sharer) structValue(v reflect.Value) uint64 {
	t := v.Type()
	meta := t == objectMetaType
	h := uint64(41)
	for i := range v.NumField() {
		f := v.Field(i)
		name := t.Field(i).Name
		if (meta && uniqueMetaFields[name]) || (uniqueFields[name] && f.Kind() == reflect.String) {
			h = mix(h, maphash.String(shareSeed, f.String())) // unique to one object: not interned
			continue
		}
		h = mix(h, s.value(f, false))
	}
	return h
}

// mapValue canonicalizes a map's keys and values in place and returns a hash that
// does not depend on iteration order.
func (s *sharer) mapValue(m reflect.Value) uint64 {
	h := mix(uint64(m.Len()), 43)
	kt, vt := m.Type().Key(), m.Type().Elem()
	iter := m.MapRange()
	for iter.Next() {
		var kh, vh uint64
		k, val := iter.Key(), iter.Value()
		if kt.Kind() == reflect.String && m.CanInterface() {
			ck := reflect.New(kt).Elem()
			ck.Set(k)
			kh = s.value(ck, false)
			cv := reflect.New(vt).Elem()
			cv.Set(val)
			vh = s.value(cv, false)
			m.SetMapIndex(ck, cv) // same key: replaces the stored key and value
		} else {
			kh, vh = s.value(k, false), s.value(val, false)
		}
		h += mix(kh, vh) // commutative: iteration order does not matter
	}
	return h
}

// share replaces v (a settable slice, map or pointer) with an equal canonical
// value when one exists, or offers v as the canonical value.
func (s *sharer) share(v reflect.Value, h uint64, n int) {
	key := shareKey{t: v.Type(), h: h}
	p := dataPointer(v)
	if p == nil {
		return
	}
	shareTable.Lock()
	defer shareTable.Unlock()
	entries := shareTable.m[key]
	live := entries[:0]
	for _, e := range entries {
		q := e.p.Value()
		if q == nil {
			continue // freed: drop the entry
		}
		live = append(live, e)
		if unsafe.Pointer(q) == p {
			continue
		}
		if e.n != n {
			continue
		}
		cand := fromPointer(v.Type(), unsafe.Pointer(q), n)
		if reflect.DeepEqual(cand.Interface(), v.Interface()) {
			v.Set(cand)
			shareTable.m[key] = live
			return
		}
	}
	if len(live) == 0 {
		delete(shareTable.m, key)
	} else {
		shareTable.m[key] = live
	}
	// Admit a value to the table the second time its hash is seen.
	slot := &shareTable.seen[h&(uint64(len(shareTable.seen))-1)]
	if len(live) == 0 && *slot != h {
		*slot = h
		return
	}
	shareTable.m[key] = append(shareTable.m[key], shareEntry{p: weak.Make((*byte)(p)), n: n})
	shareTable.inserts++
	if shareTable.inserts%4096 == 0 {
		sweepShareTable()
	}
}

// sweepShareTable drops entries whose values were freed. Called with the lock held.
func sweepShareTable() {
	for k, entries := range shareTable.m {
		live := entries[:0]
		for _, e := range entries {
			if e.p.Value() != nil {
				live = append(live, e)
			}
		}
		if len(live) == 0 {
			delete(shareTable.m, k)
		} else {
			shareTable.m[k] = live
		}
	}
}

// dataPointer is the heap object behind a slice, map or pointer value.
func dataPointer(v reflect.Value) unsafe.Pointer {
	switch v.Kind() {
	case reflect.Slice, reflect.Pointer:
		return v.UnsafePointer()
	case reflect.Map:
		return v.UnsafePointer() // the map's runtime header
	}
	return nil
}

// fromPointer rebuilds a value of type t from the heap object p.
func fromPointer(t reflect.Type, p unsafe.Pointer, n int) reflect.Value {
	out := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.Slice:
		out.Set(reflect.SliceAt(t.Elem(), p, n).Convert(t))
	case reflect.Pointer:
		out.Set(reflect.NewAt(t.Elem(), p))
	case reflect.Map:
		*(*unsafe.Pointer)(out.Addr().UnsafePointer()) = p
	}
	return out
}

func mix(a, b uint64) uint64 {
	a ^= b + 0x9e3779b97f4a7c15 + (a << 6) + (a >> 2)
	a *= 0xbf58476d1ce4e5b9
	return a ^ (a >> 31)
}
