package shrink

import (
	"hash/maphash"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Sharing (WithSharing) makes the cached objects of one informer share equal
// parts: the containers, volumes, env lists, resource maps, probes, labels and
// owner references that the Pods of one workload repeat byte for byte. Each
// object is walked once, children before parents; every slice, map and pointer
// gets a content hash and, when an equal value is already held by a cached
// object of the same informer, is replaced by that value. Children are made
// canonical first, so an equal parent compares cheaply (its children are the
// same pointers). Interning (WithInterning, and sharing) does the same for
// strings only.
//
// Listers read canonical values on other goroutines at any time, so the walk
// never writes into one: a value found in the table's reverse record is not
// descended into (its recorded hash stands for it), and the walk writes only
// into the object's own parts: a string field whose canonical copy is another
// allocation, a map entry whose key or value was replaced, a field that now
// holds a canonical value. Applied to its own output, the walk writes nothing at
// all: every string is already its canonical copy and every shared part is in
// the reverse record. That is what makes it safe under client-go's WatchList,
// which transforms each listed object twice, the second time when its parts are
// already held by cached objects.

// sharer walks one object. In a transform it runs under its table's lock with
// write and trust set; the mutation guard runs it with neither, to hash a
// canonical value from its content alone.
type sharer struct {
	t          *shareTable
	containers bool // share slices, maps and pointers, not only strings
	write      bool // intern and share: write into the object's own parts
	trust      bool // take a canonical value's hash from the table instead of its content

	// For the mutation guard: the object's key and the path to the value being
	// walked, kept only when the guard is on.
	track bool
	key   string
	path  []pathElem

	topMap unsafe.Pointer // an unstructured object's own map: unique to it, never shared
	inMeta bool           // walking the metadata map of an unstructured object

	// sibling is set when prev is not a version of the object but another
	// object of the same controller (see siblingOf): its canonical parts
	// are taken where equal, never its own ones (ownPrev, topFields).
	sibling bool
}

type pathElem struct {
	field string // a field or map key
	index int    // a slice index, when field is ""
	key   bool   // field is a map key
}

// walkObject interns obj's strings and, with containers, shares its slices,
// maps and pointers, in place, with t's canonical values, by the reflective
// walk: sharing's, and interning's reference in tests (shareObject).
//
// prev, when not nil, is the version of obj the cache holds (the object of
// the same key handed to the informer before), read and never written: a
// part of obj equal to prev's part at the same place takes prev's (see
// walk), which is most of a MODIFIED object, found by one comparison rather
// than by hashing it and looking it up.
//
// Without prev, an object with a controller (a Pod of a ReplicaSet) is
// walked beside its sibling, an object of the same controller this table
// walked before and keeps for it (siblingOf, setSibling): the Pods of one
// workload hold equal containers, volumes, labels and owner references, and
// a part equal to the sibling's canonical one takes it after one
// comparison, neither descended into, hashed nor looked up. Only canonical
// parts are taken from a sibling, never its own parts nor its strings, which
// may be its own too (the first object to hold a value keeps its copy): its
// own are no other object's (ownPrev and topFields are for versions of one
// object), and with them an object's second walk (client-go's second pass
// over a listed object) would find other values than its first and write
// them. Typed objects and metadata only: an unstructured object's owner
// references are not read without building them.
func walkObject(t *shareTable, obj, prev any, containers bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	var pv reflect.Value
	if p := reflect.ValueOf(prev); containers && p.IsValid() && p.Type() == v.Type() && !p.IsNil() && p.Pointer() != v.Pointer() {
		pv = p.Elem()
	}
	s := sharer{t: t, containers: containers, write: true, trust: true}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		s.topMap = reflect.ValueOf(u.Object).UnsafePointer()
	}
	if containers && t.guarded {
		s.track = true
		s.key = objectKey(obj)
	}
	var owner string // obj's controller, when obj may have a sibling
	if walkSiblings && containers && !s.track && s.topMap == nil && prev == nil {
		owner = controllerOf(obj)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.objects++
	if pv.IsValid() && !s.track && pv.Kind() == reflect.Struct && s.topMap == nil {
		s.topFields(v.Elem(), pv)
		return
	}
	if owner != "" {
		pv = t.siblingOf(owner, v)
		s.sibling = pv.IsValid()
		defer t.setSibling(owner, v)
	}
	s.walk(v.Elem(), pv)
}

// topFields walks the fields of a typed object's own struct (a Pod's
// metadata, spec and status) beside prev's: a field equal to prev's takes it
// whole after one comparison, neither hashed nor looked up, since no parent
// needs its hash; the others are walked beside prev's. Not under the mutation
// guard: the field may hold prev's own parts, which the guard does not watch.
func (s *sharer) topFields(v, prev reflect.Value) {
	fields := s.fieldsOf(v.Type())
	for i := range fields {
		f, pf := v.Field(i), prev.Field(i)
		switch {
		case f.CanSet() && equalValues(f, pf):
			f.Set(pf)
		case fields[i].unique:
			s.str(f, reflect.Value{}, true)
		default:
			s.walk(f, pf)
		}
	}
}

// fieldsOf is fieldsOf, from the table's cache when the walk has a table.
func (s *sharer) fieldsOf(t reflect.Type) []fieldInfo {
	if s.t == nil {
		return fieldsOf(t)
	}
	return s.t.fields.get(t, fieldsOf)
}

// hashValue is the content hash of v, read without writing anything and
// without trusting the table: what the mutation guard compares.
func hashValue(v reflect.Value) uint64 {
	var s sharer
	h, _ := s.value(v)
	return h
}

func objectKey(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	if ns := m.GetNamespace(); ns != "" {
		return ns + "/" + m.GetName()
	}
	return m.GetName()
}

// value walks v and returns its content hash, and whether v itself was
// written (which a caller holding a copy of v, as of a map value, must store).
func (s *sharer) value(v reflect.Value) (uint64, bool) {
	return s.walk(v, reflect.Value{})
}

// walk is value with prev, the previous version's value at v's place (of v's
// type), or an invalid Value. Where prev's slice, map or pointer is canonical
// and equal to v, v takes it without being descended into; where prev's is
// its own and equal to v once v's parts are walked, v takes it too (not under
// the mutation guard, which watches canonical values only), so that a part
// unique to one object is not made canonical by the object's next version, as
// a second sighting; an equal string takes prev's without a table lookup.
// prev is only read: other goroutines read it in the cache.
func (s *sharer) walk(v, prev reflect.Value) (uint64, bool) {
	if !s.write {
		prev = reflect.Value{}
	}
	switch v.Kind() {
	case reflect.String:
		return s.str(v, prev, false)
	case reflect.Bool:
		if v.Bool() {
			return 1, false
		}
		return 2, false
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return mix(uint64(v.Int()), 3), false
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return mix(v.Uint(), 5), false
	case reflect.Float32, reflect.Float64:
		return mix(math.Float64bits(v.Float()), 7), false
	case reflect.Struct:
		return s.structValue(v, prev)
	case reflect.Pointer:
		return s.pointer(v, prev)
	case reflect.Slice:
		return s.slice(v, prev)
	case reflect.Map:
		return s.mapValue(v, prev)
	case reflect.Interface:
		return s.iface(v, prev)
	case reflect.Array:
		h, changed := uint64(31), false
		for i := range v.Len() {
			eh, c := s.walk(v.Index(i), at(prev, i))
			h, changed = mix(h, eh), changed || c
		}
		return h, changed
	}
	return 37, false // channels, functions: never in API objects
}

// at is prev's element i, or an invalid Value.
func at(prev reflect.Value, i int) reflect.Value {
	if !prev.IsValid() || i >= prev.Len() {
		return reflect.Value{}
	}
	return prev.Index(i)
}

// str interns a string field. unique marks a string unique to its object (a
// name, a uid), which is hashed but not interned.
func (s *sharer) str(v, prev reflect.Value, unique bool) (uint64, bool) {
	str := v.String()
	h := maphash.String(shareSeed, str)
	if unique || !s.write || !v.CanSet() || str == "" {
		return h, false
	}
	// A sibling's string may be its own, not the canonical copy (the first
	// object to hold a string keeps it): not taken.
	if prev.IsValid() && !s.sibling {
		if p := prev.String(); p == str {
			if unsafe.StringData(p) == unsafe.StringData(str) {
				return h, false
			}
			v.SetString(p)
			return h, true
		}
	}
	if len(str) > maxInternLen {
		return h, false
	}
	c := s.t.internLocked(str, h)
	if unsafe.StringData(c) == unsafe.StringData(str) {
		return h, false
	}
	v.SetString(c)
	return h, true
}

func (s *sharer) structValue(v, prev reflect.Value) (uint64, bool) {
	switch v.Type() {
	case timeType:
		// wall and ext are the instant; the *Location is left out, being
		// shared by every time of one zone.
		return mix(mix(v.Field(0).Uint(), uint64(v.Field(1).Int())), 47), false
	case quantityType:
		if v.CanAddr() {
			// A Quantity caches its string form and may switch its
			// representation when read (String, AsDec): neither is a change
			// of its value, so the hash reads the value only.
			q := (*resource.Quantity)(v.Addr().UnsafePointer())
			return mix(math.Float64bits(q.AsApproximateFloat64()), maphash.String(shareSeed, string(q.Format))), false
		}
	}
	fields := s.fieldsOf(v.Type())
	h, changed := uint64(41), false
	for i := range fields {
		f := &fields[i]
		named := s.track && f.name != "" // an inlined field adds nothing to the path
		if named {
			s.path = append(s.path, pathElem{field: f.name})
		}
		var fh uint64
		var c bool
		switch {
		case f.unique:
			fh, c = s.str(v.Field(i), reflect.Value{}, true)
		case prev.IsValid():
			fh, c = s.walk(v.Field(i), prev.Field(i))
		default:
			fh, c = s.value(v.Field(i))
		}
		if named {
			s.path = s.path[:len(s.path)-1]
		}
		h, changed = mix(h, fh), changed || c
	}
	return h, changed
}

// canonical returns the table's entry when v's allocation is a canonical value,
// to be neither descended into nor written. Only in a transform's walk.
func (s *sharer) canonical(v reflect.Value) *canonEntry {
	if !s.trust || !s.containers || s.t == nil {
		return nil
	}
	return s.t.canonicalEntry(v.Type(), v.UnsafePointer())
}

// canonicalPrev gives v (a slice of length n, a map or a pointer of the
// object's own) prev, the previous version's value at its place, when prev is
// canonical and equal to v, and returns prev's entry. held says whether prev
// is canonical at all.
func (s *sharer) canonicalPrev(v, prev reflect.Value, n int) (e *canonEntry, held bool) {
	if !prev.IsValid() || prev.IsNil() || !v.CanSet() {
		return nil, false
	}
	if e = s.canonical(prev); e == nil {
		return nil, false
	}
	if e.n != n || (n >= 0 && prev.Len() != n) || !equalValues(v, prev) {
		return nil, true
	}
	v.Set(prev)
	if e.g != nil {
		e.g.holders++
	}
	return e, true
}

// ownPrev gives v prev, the previous version's own (not canonical) value at
// its place, when they are equal: v's parts are walked already, and equal
// ones are prev's parts now, so the comparison is mostly of pointers. Not
// under the mutation guard, which watches canonical values only.
func (s *sharer) ownPrev(v, prev reflect.Value) bool {
	if !s.containers || s.track || s.sibling || !prev.IsValid() || prev.IsNil() || !v.CanSet() {
		return false
	}
	if dataPointer(v) == dataPointer(prev) || !equalValues(v, prev) {
		return false
	}
	v.Set(prev)
	return true
}

// readOnly walks v without writing, for values that are not the object's own.
func (s *sharer) readOnly(v reflect.Value) uint64 {
	w := s.write
	s.write = false
	h, _ := s.value(v)
	s.write = w
	return h
}

// adopt replaces v (a slice, map or pointer of the object's own) by an equal
// canonical value, if the table has one.
func (s *sharer) adopt(v reflect.Value, h uint64, n int) bool {
	if !s.containers || !s.write || !v.CanSet() {
		return false
	}
	return s.t.adoptEqual(v, h, n)
}

// offer offers v as a canonical value.
func (s *sharer) offer(v reflect.Value, h uint64, n int) {
	if !s.containers || !s.write || !v.CanSet() {
		return
	}
	if e := s.t.offer(v, h, n); e != nil && s.track {
		e.g = &guardRecord{key: s.key, path: s.pathString(), holders: 1}
	}
}

func (s *sharer) pointer(v, prev reflect.Value) (uint64, bool) {
	if v.IsNil() {
		return 11, false
	}
	if e := s.canonical(v); e != nil {
		return e.h, false
	}
	e, held := s.canonicalPrev(v, prev, -1)
	if e != nil {
		return e.h, true
	}
	var pe reflect.Value
	if prev.IsValid() && !prev.IsNil() {
		pe = prev.Elem()
	}
	eh, _ := s.walk(v.Elem(), pe)
	h := mix(eh, 13)
	if s.adopt(v, h, -1) || (!held && s.ownPrev(v, prev)) {
		return h, true
	}
	s.offer(v, h, -1)
	return h, false
}

func (s *sharer) slice(v, prev reflect.Value) (uint64, bool) {
	if v.IsNil() {
		return 17, false
	}
	if v.Type().Elem().Kind() == reflect.Uint8 {
		return maphash.Bytes(shareSeed, v.Bytes()), false
	}
	n := v.Len()
	if n == 0 {
		return mix(0, 19), false
	}
	if e := s.canonical(v); e != nil {
		if e.n == n {
			return e.h, false
		}
		return s.readOnly(v), false // a piece of a shared array: read, never written
	}
	e, held := s.canonicalPrev(v, prev, n)
	if e != nil {
		return e.h, true
	}
	h := mix(uint64(n), 19)
	for i := range n {
		if s.track {
			s.path = append(s.path, pathElem{index: i})
		}
		eh, _ := s.walk(v.Index(i), at(prev, i))
		if s.track {
			s.path = s.path[:len(s.path)-1]
		}
		h = mix(h, eh)
	}
	if s.adopt(v, h, n) || (!held && s.ownPrev(v, prev)) {
		return h, true
	}
	s.offer(v, h, n)
	return h, false
}

// entryWrite is an entry of a map to store again once the walk is done: its
// key's canonical copy, and its value, a string (str) or any other value (v).
type entryWrite struct {
	k, sv string
	str   bool
	v     reflect.Value
}

// mapValue walks a map. Its hash does not depend on iteration order. Keys and
// values are interned by replacing the entry (Go stores the given key when
// assigning to an existing one), after the walk and only when the map is the
// object's own and not replaced by a canonical one.
//
// Each entry is read into one key and one value variable per map
// (SetIterKey, SetIterValue) rather than copied out by the iterator, and an
// entry to store again keeps its strings as strings: the walk used to
// allocate a copy of every key and value of every map, which was most of the
// garbage sharing made. The entries to store again are kept in the table's
// scratch (see shareTable.writes), not in a slice of each map's.
func (s *sharer) mapValue(v, prev reflect.Value) (uint64, bool) {
	if v.IsNil() {
		return 23, false
	}
	n := v.Len()
	if n == 0 {
		return mix(0, 43), false
	}
	if e := s.canonical(v); e != nil {
		return e.h, false
	}
	inMeta := s.inMeta
	s.inMeta = false
	top := v.UnsafePointer() == s.topMap
	held := false // prev is canonical
	if !top {
		var e *canonEntry
		if e, held = s.canonicalPrev(v, prev, -1); e != nil {
			return e.h, true
		}
	}
	kt, vt := v.Type().Key(), v.Type().Elem()
	writable := s.write && v.CanSet() && kt.Kind() == reflect.String
	// The previous version's entries are looked up for values that hold
	// parts (unstructured content, quantities), not for strings: a lookup
	// in prev costs about what interning the string does.
	prevEntries := writable && prev.IsValid() && !prev.IsNil() && vt.Kind() != reflect.String
	h := mix(uint64(n), 43)
	base := s.writesFrom() // this map's entry writes follow base
	// Variables for the entries; a map read through an unexported field
	// cannot be copied from (and is walked read-only), so its entries are
	// copied out.
	var kv, vv reflect.Value
	copied := v.CanInterface()
	if copied {
		kv, vv = reflect.New(kt).Elem(), reflect.New(vt).Elem()
	}
	iter := v.MapRange()
	for iter.Next() {
		var k, val reflect.Value
		if copied {
			kv.SetIterKey(iter)
			vv.SetIterValue(iter)
			k, val = kv, vv
		} else {
			k, val = iter.Key(), iter.Value()
		}
		if kt.Kind() != reflect.String {
			h += mix(s.readOnly(k), s.readOnly(val))
			continue
		}
		ks := k.String()
		kh := maphash.String(shareSeed, ks)
		kc := ks
		if writable && ks != "" && len(ks) <= maxInternLen {
			kc = s.t.internLocked(ks, kh)
		}
		if s.track {
			s.path = append(s.path, pathElem{field: ks, key: true})
		}
		var vh uint64
		w := entryWrite{k: kc}
		changed := false
		switch {
		case vt.Kind() == reflect.String:
			w.str = true
			vh, w.sv, changed = s.mapString(val, writable && !(inMeta && uniqueMetaKeys[ks]))
		case !val.CanInterface():
			vh = s.readOnly(val)
		default:
			// A copy, so that a struct value is addressable and a reference
			// (map, slice, pointer, interface) can be replaced: the value
			// variable, or a new one for a map whose entries are copied out.
			cv := val
			if !copied {
				cv = reflect.New(vt).Elem()
				cv.Set(val)
			}
			s.inMeta = top && ks == "metadata"
			if writable && !(inMeta && uniqueMetaKeys[ks]) {
				var pe reflect.Value
				if prevEntries {
					pe = prev.MapIndex(k)
				}
				vh, changed = s.walk(cv, pe)
			} else {
				vh = s.readOnly(cv)
			}
			s.inMeta = false
			w.v = cv
		}
		if s.track {
			s.path = s.path[:len(s.path)-1]
		}
		if unsafe.StringData(kc) != unsafe.StringData(ks) || changed {
			if !w.str && copied {
				// The value variable is reused by the next entry.
				c := reflect.New(vt).Elem()
				c.Set(val)
				w.v = c
			}
			s.t.writes = append(s.t.writes, w)
		}
		h += mix(kh, vh) // commutative: iteration order does not matter
	}
	if !top && (s.adopt(v, h, -1) || (!held && s.ownPrev(v, prev))) {
		s.dropWrites(base)
		return h, true // the map's own entries are left as they were: it is dropped
	}
	if base >= 0 && len(s.t.writes) > base {
		writes := s.t.writes[base:]
		key := reflect.New(kt).Elem()
		var str reflect.Value
		for _, w := range writes {
			key.SetString(w.k)
			if w.str {
				if !str.IsValid() {
					str = reflect.New(vt).Elem()
				}
				str.SetString(w.sv)
				v.SetMapIndex(key, str)
			} else {
				v.SetMapIndex(key, w.v)
			}
		}
		s.dropWrites(base)
	}
	if !top {
		s.offer(v, h, -1)
	}
	return h, false
}

// maxWritesKept bounds the scratch of entry writes the table keeps between
// walks: a larger one, grown by a map of many entries, is let go.
const maxWritesKept = 256

// writesFrom is where the entry writes of a map about to be walked begin in
// the table's scratch; -1 for a walk without a table, which only reads.
func (s *sharer) writesFrom() int {
	if s.t == nil {
		return -1
	}
	return len(s.t.writes)
}

// dropWrites drops the entry writes past base, clearing them so that the
// scratch holds no part of a walked object.
func (s *sharer) dropWrites(base int) {
	if base < 0 {
		return
	}
	t := s.t
	clear(t.writes[base:])
	t.writes = t.writes[:base]
	if base == 0 && cap(t.writes) > maxWritesKept {
		t.writes = nil
	}
}

// mapString hashes a string map value and returns the string to store: its
// canonical copy, or itself. changed says it is another allocation.
func (s *sharer) mapString(val reflect.Value, intern bool) (uint64, string, bool) {
	vs := val.String()
	vh := maphash.String(shareSeed, vs)
	if !intern || vs == "" || len(vs) > maxInternLen {
		return vh, vs, false
	}
	c := s.t.internLocked(vs, vh)
	return vh, c, unsafe.StringData(c) != unsafe.StringData(vs)
}

func (s *sharer) iface(v, prev reflect.Value) (uint64, bool) {
	if v.IsNil() {
		return 29, false
	}
	e := v.Elem()
	switch e.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return s.value(e)
	}
	if !s.write || !v.CanSet() {
		return s.readOnly(e), false
	}
	var pe reflect.Value // prev's value, when of e's type
	if prev.IsValid() && !prev.IsNil() && prev.Elem().Type() == e.Type() {
		pe = prev.Elem()
	}
	if e.Kind() == reflect.String {
		str := e.String()
		h := maphash.String(shareSeed, str)
		if str == "" {
			return h, false
		}
		if pe.IsValid() && pe.String() == str && !s.sibling {
			if unsafe.StringData(pe.String()) == unsafe.StringData(str) {
				return h, false
			}
			v.Set(prev)
			return h, true
		}
		if len(str) > maxInternLen {
			return h, false
		}
		c := s.t.internLocked(str, h)
		if unsafe.StringData(c) == unsafe.StringData(str) {
			return h, false
		}
		v.Set(reflect.ValueOf(c).Convert(e.Type()))
		return h, true
	}
	c := reflect.New(e.Type()).Elem()
	c.Set(e)
	h, changed := s.walk(c, pe)
	if changed {
		v.Set(c)
	}
	return h, changed
}

// pathString formats the current path as a field path: spec.containers[0].env.
func (s *sharer) pathString() string {
	var b strings.Builder
	for _, p := range s.path {
		switch {
		case p.key:
			b.WriteString("[")
			b.WriteString(strconv.Quote(p.field))
			b.WriteString("]")
		case p.field != "":
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p.field)
		default:
			b.WriteString("[" + strconv.Itoa(p.index) + "]")
		}
	}
	return b.String()
}

// walkSiblings makes walkObject walk an object without a previous version
// beside its sibling (a variable only so that tests and BenchmarkShareList
// can compare without it).
var walkSiblings = true
