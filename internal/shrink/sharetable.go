package shrink

import (
	"math"
	"reflect"
	"strings"
	"sync"
	"unsafe"
	"weak"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// shareTable holds the canonical values of one Pipeline (an informer's, or a
// Transformer's): strings for interning, and the slices, maps and pointers that
// sharing gives to every object holding an equal value. Each informer has its
// own table, so sharing never links objects of two informers, two resource
// types or two factories: a Service's selector never becomes the map that holds
// a Pod's labels.
//
// Every entry is a weak pointer: a canonical value that no cached object holds
// any more is freed by the garbage collector, and its entry is dropped at the
// next sweep. While one object holds a value, the entry stays, so an equal value
// decoded later (a watch event an hour on) gets the same copy. The unique
// package, which interning used before, forgets a string at the first garbage
// collection after its handle is dropped, so equal strings decoded in different
// GC cycles stayed apart.
//
// A value enters the table the second time its hash is seen, in another
// allocation of another object (secondSighting): values unique to one object
// (its status, its IPs, its name) cost no entry, a value repeated inside one
// object is not worth one, and a second pass over the same object (client-go
// transforms an object twice under WatchList) is not a second sighting. The
// first object to hold a value keeps its own copy.
type shareTable struct {
	mu sync.Mutex

	strs map[uint64]strEntry // by content hash

	// values maps a type and a content hash to the canonical values with them.
	values map[shareKey][]*canonEntry
	// canonical is the reverse record: a canonical value's allocation (and
	// type) to its entry. A value found there is never descended into or
	// written: other cached objects, read by listers, hold it.
	canonical map[revKey]*canonEntry

	seen    []uint64 // first sightings, by hash: see sighting
	firsts  int      // first sightings recorded since seen last grew
	objects uint64   // objects walked: the sequence number of the current one
	inserts int      // entries added since the last sweep

	// cand holds the candidate adoptEqual compares, as memory the
	// comparison can read (a local would escape to the heap).
	cand header
	// writes is mapValue's scratch: the entries of the maps being walked
	// that are to be stored again, as a stack. A walk of a map appends its
	// entries past the length it found, after any walk of a map nested in
	// its values has dropped its own, and drops them when it has stored
	// them. Kept here rather than in a slice of each map's, which was a
	// quarter of what a metadata-only informer's sync allocated.
	writes []entryWrite
	// fields and plans cache fieldsOf and eqPlanOf for the walks.
	fields typeCache[[]fieldInfo]
	plans  typeCache[*eqPlan]

	// guarded is true when the mutation guard watches the shared values:
	// each canonical value then carries a guardRecord.
	guarded bool

	// siblings holds, by controller uid, an object of that controller
	// walked without a previous version (see walkObject, setSibling).
	siblings map[string]siblingRef
}

type strEntry struct {
	p weak.Pointer[byte]
	n int
}

type shareKey struct {
	t typeID
	h uint64
}

// revKey is an allocation's address, as a number: looking a value up must not
// attach a weak handle to every slice and map of every object. An entry is
// valid only while its weak pointer still yields that address.
type revKey struct {
	p uintptr
	t typeID
}

// typeID is a type's identity as a number: the address of its runtime type
// descriptor, which the runtime never frees or moves. The table's keys hold
// it rather than the reflect.Type, an interface, which a map hashes through
// its dynamic type's hash function.
type typeID uintptr

func idOf(t reflect.Type) typeID {
	return typeID((*[2]uintptr)(unsafe.Pointer(&t))[1]) // the interface's data word: *rtype
}

// canonEntry is one canonical slice, map or pointer.
type canonEntry struct {
	p weak.Pointer[byte]
	t reflect.Type
	n int    // slice length; -1 for maps and pointers
	h uint64 // content hash when the value entered the table
	g *guardRecord
}

// guardRecord is what the mutation guard knows of one shared value. Its fields
// are written with the table's lock held.
type guardRecord struct {
	key, path string
	holders   int  // objects given this value, including the first
	reported  bool // among a check's fresh mutations already
}

// sighting packs a first sighting into a slot of the seen filter: 32 bits of
// the value's hash (bits 11 to 42: the slot's index holds the bits below, and
// the tag keeps those a grown filter's index needs), 16 bits of its address and
// 16 bits of the object's sequence number, as numbers that keep nothing alive.
// The address tells the same value seen again (client-go's second pass over an
// object) from a second value with the same hash; the sequence number tells a
// value repeated inside one object (a Pod's IP in status.podIP and
// status.podIPs), not worth an entry, from one repeated by two objects. Either
// can be fooled, rarely, which costs a missed or an extra entry and never a
// wrong value: values are compared before they are shared.
//
// The address is hashed first: objects decoded alike allocate alike, and the
// low bits of two values' addresses are often equal (values exactly 512 KiB
// apart, one every few objects), which made second sightings look like the same
// value seen again.
func sighting(h uint64, p uintptr, obj uint64) uint64 {
	return uint64(uint32(h>>tagShift))<<32 | uint64(uint16(mix(uint64(p), 53)))<<16 | uint64(uint16(obj))
}

const (
	tagShift = 11 // log2(minSeenSlots)
	tagMask  = 0xffffffff_00000000
	addrMask = 0x00000000_ffff0000
	seqMask  = 0x00000000_0000ffff

	// The filter doubles whenever its first sightings fill half its slots,
	// from minSeenSlots (16 KiB, for the many informers of a few objects) to
	// maxSeenSlots (512 KiB, the size of the process-wide filter sharing used
	// before tables were per informer).
	minSeenSlots = 1 << tagShift
	maxSeenSlots = 1 << 16
	sweepEvery   = 4096 // entries added between sweeps of freed ones
	seenWays     = 8    // slots a hash may take in the filter (secondSighting)
)

func newShareTable(guarded bool) *shareTable {
	return &shareTable{
		strs:      map[uint64]strEntry{},
		values:    map[shareKey][]*canonEntry{},
		canonical: map[revKey]*canonEntry{},
		seen:      make([]uint64, minSeenSlots),
		guarded:   guarded,
	}
}

// secondSighting reports whether a value with hash h at address p has been
// seen before at another address in another object, and records this sighting
// otherwise. The filter is seenWays-way associative: a hash has seenWays slots,
// and a new sighting replaces the oldest of them, so that values of every
// object of a kind that fall on the same slots do not evict each other for
// ever. Two ways missed a share of a small informer's values in about one
// process in seven (which values collide depends on the process's hash seed),
// four in one in twenty; eight missed none in 60 processes. Called with t.mu
// held.
func (t *shareTable) secondSighting(h uint64, p uintptr) bool {
	i := h & uint64(len(t.seen)-1) &^ (seenWays - 1)
	group := t.seen[i : i+seenWays : i+seenWays]
	now := sighting(h, p, t.objects)
	for j, slot := range group {
		if slot == 0 || slot&tagMask != now&tagMask {
			continue // empty, or another hash
		}
		switch {
		case slot&seqMask == now&seqMask:
			return false // the same object: keep its first sighting
		case slot&addrMask != now&addrMask:
			return true
		}
		group[j] = now // the same value seen again
		return false
	}
	age := func(slot uint64) uint64 {
		if slot == 0 {
			return math.MaxUint64
		}
		return (t.objects - slot) & seqMask
	}
	oldest := 0
	for j := 1; j < seenWays; j++ {
		if age(group[j]) > age(group[oldest]) {
			oldest = j
		}
	}
	group[oldest] = now
	if t.firsts++; 2*t.firsts >= len(t.seen) && len(t.seen) < maxSeenSlots {
		t.grow()
	}
	return false
}

// grow doubles the filter and moves each sighting to its pair in the grown
// one, by the hash bit its tag keeps. Called with t.mu held.
func (t *shareTable) grow() {
	n := len(t.seen)
	grown := make([]uint64, 2*n)
	bit := uint64(n) >> tagShift // n's bit of the hash, in the tag (n >= 1<<tagShift)
	for i, slot := range t.seen {
		if slot == 0 {
			continue
		}
		j := uint64(i)
		if (slot>>32)&bit != 0 {
			j += uint64(n)
		}
		grown[j] = slot
	}
	t.seen = grown
	t.firsts = 0
}

// internLocked returns the canonical string equal to s (whose hash is h), which
// may be s itself. A string seen for the second time becomes canonical as a
// copy of its own, so that a canonical string never keeps alive the buffer a
// decoder may have cut it from. Called with t.mu held.
func (t *shareTable) internLocked(s string, h uint64) string {
	if e, ok := t.strs[h]; ok {
		if p := e.p.Value(); p != nil {
			if c := unsafe.String(p, e.n); c == s {
				return c
			}
			return s // another string with the same hash: left alone
		}
	}
	if !t.secondSighting(h, uintptr(unsafe.Pointer(unsafe.StringData(s)))) {
		return s
	}
	c := strings.Clone(s)
	t.strs[h] = strEntry{p: weak.Make(unsafe.StringData(c)), n: len(c)}
	t.added()
	return c
}

// canonicalEntry returns the entry of the canonical value at p (a slice's
// array, a map's header, a pointer's target) of type typ, if p is one.
// Called with t.mu held.
func (t *shareTable) canonicalEntry(typ reflect.Type, p unsafe.Pointer) *canonEntry {
	if p == nil {
		return nil
	}
	k := revKey{p: uintptr(p), t: idOf(typ)}
	e := t.canonical[k]
	if e == nil {
		return nil
	}
	if unsafe.Pointer(e.p.Value()) != p {
		delete(t.canonical, k) // freed, and the address reused
		return nil
	}
	return e
}

// adoptEqual replaces v (an addressable slice of length n, map or pointer
// whose content hash is h) by an equal canonical value, if the table has one,
// and reports whether it did. The candidate is compared and stored in place,
// as the words of its header: building a reflect.Value of it allocated one
// per part shared, two thirds of what sharing a Pod allocated. Called with
// t.mu held.
func (t *shareTable) adoptEqual(v reflect.Value, h uint64, n int) bool {
	typ := v.Type()
	entries := t.values[shareKey{t: idOf(typ), h: h}]
	if len(entries) == 0 {
		return false
	}
	at := v.Addr().UnsafePointer()
	plan := t.plans.get(typ, eqPlanOf)
	for _, e := range entries {
		if e.n != n {
			continue
		}
		q := e.p.Value()
		if q == nil {
			continue // freed: the next sweep drops it
		}
		cand := &t.cand
		cand.set(typ.Kind(), unsafe.Pointer(q), n)
		equal := plan.equal(unsafe.Pointer(cand), at)
		if equal {
			cand.storeAt(typ.Kind(), at)
		}
		*cand = header{} // keeps nothing alive
		if equal {
			if e.g != nil {
				e.g.holders++
			}
			return true
		}
	}
	return false
}

// header is the memory of a slice, map or pointer value: a slice's three
// words, or a map's or pointer's one.
type header struct {
	data     unsafe.Pointer
	len, cap int
}

func (c *header) set(k reflect.Kind, p unsafe.Pointer, n int) {
	c.data = p
	if k == reflect.Slice {
		c.len, c.cap = n, n
	}
}

// storeAt writes c into the memory at p of a value of kind k: three words
// for a slice, one otherwise (the words after a map or pointer are another
// field's, or another allocation's).
func (c *header) storeAt(k reflect.Kind, p unsafe.Pointer) {
	if k == reflect.Slice {
		*(*header)(p) = *c
		return
	}
	*(*unsafe.Pointer)(p) = c.data
}

// offer makes v canonical if its hash was seen before in another value, and
// returns its new entry (nil if it did not enter). Called with t.mu held.
func (t *shareTable) offer(v reflect.Value, h uint64, n int) *canonEntry {
	p := dataPointer(v)
	if p == nil || !t.secondSighting(h, uintptr(p)) {
		return nil
	}
	e := &canonEntry{p: weak.Make((*byte)(p)), t: v.Type(), n: n, h: h}
	id := idOf(e.t)
	k := shareKey{t: id, h: h}
	t.values[k] = append(t.values[k], e)
	t.canonical[revKey{p: uintptr(p), t: id}] = e
	t.added()
	return e
}

func (t *shareTable) added() {
	if t.inserts++; t.inserts >= sweepEvery {
		t.sweep()
	}
}

// sweep drops the entries of values the garbage collector has freed. Called
// with t.mu held.
func (t *shareTable) sweep() {
	t.inserts = 0
	for h, e := range t.strs {
		if e.p.Value() == nil {
			delete(t.strs, h)
		}
	}
	for k, entries := range t.values {
		live := entries[:0]
		for _, e := range entries {
			if e.p.Value() != nil {
				live = append(live, e)
			}
		}
		clear(entries[len(live):])
		if len(live) == 0 {
			delete(t.values, k)
		} else {
			t.values[k] = live
		}
	}
	for k, e := range t.canonical {
		if uintptr(unsafe.Pointer(e.p.Value())) != k.p {
			delete(t.canonical, k)
		}
	}
}

// entries returns the live canonical values, for the mutation guard.
func (t *shareTable) entries() []*canonEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*canonEntry, 0, len(t.canonical))
	for _, e := range t.canonical {
		out = append(out, e)
	}
	return out
}

// dataPointer is the allocation behind a slice, map or pointer value.
func dataPointer(v reflect.Value) unsafe.Pointer {
	switch v.Kind() {
	case reflect.Slice, reflect.Pointer, reflect.Map:
		return v.UnsafePointer() // a map's is its runtime header
	}
	return nil
}

// fromPointer rebuilds a value of type t from the allocation p.
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

// maxSiblings bounds the controllers a table keeps a sibling of
// (siblingOf): past it the record starts again.
const maxSiblings = 64

// siblingRef is the sibling kept for one controller: a weak pointer, so that
// a sibling is freed with the last cached object, as canonical values are.
type siblingRef struct {
	p weak.Pointer[byte]
	t reflect.Type // the object's pointer type
	n int          // objects recorded for the controller, up to 2
}

// siblingOf returns the struct of the sibling kept for controller owner,
// when it is alive, of v's type and not v's object itself, or an invalid
// Value. Called with t.mu held.
func (t *shareTable) siblingOf(owner string, v reflect.Value) reflect.Value {
	ref, ok := t.siblings[owner]
	if !ok || ref.t != v.Type() {
		return reflect.Value{}
	}
	p := ref.p.Value()
	if p == nil || unsafe.Pointer(p) == v.UnsafePointer() {
		return reflect.Value{}
	}
	return reflect.NewAt(ref.t.Elem(), unsafe.Pointer(p)).Elem()
}

// setSibling keeps obj (v) as controller owner's sibling unless the table
// keeps one already that is alive and not the controller's first object:
// the first object of a value keeps its own copy and the second's becomes
// the canonical one (secondSighting), so the second object walked of a
// controller is the sibling whose parts later ones can take. Called with
// t.mu held.
func (t *shareTable) setSibling(owner string, v reflect.Value) {
	ref, ok := t.siblings[owner]
	if ok && ref.n >= 2 && ref.p.Value() != nil {
		return
	}
	if t.siblings == nil {
		t.siblings = make(map[string]siblingRef)
	}
	if !ok && len(t.siblings) >= maxSiblings {
		clear(t.siblings)
	}
	t.siblings[owner] = siblingRef{p: weak.Make((*byte)(v.UnsafePointer())), t: v.Type(), n: min(ref.n+1, 2)}
}

// controllerOf returns the uid of obj's controller (its owner reference
// marked controller), or "".
func controllerOf(obj any) string {
	m, ok := obj.(metav1.Object)
	if !ok {
		return ""
	}
	for _, r := range m.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller && r.UID != "" {
			return string(r.UID)
		}
	}
	return ""
}
