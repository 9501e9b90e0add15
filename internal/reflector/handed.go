package reflector

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/internal/wire"
)

// Handed is what the reflector has been handed: the objects of the last list
// returned to it, changed by every watch event sent to it since. A re-list
// inside the watch diffs against the handed set, and unchanged objects are found in
// it, rather than in the informer's indexer, because the indexer lags behind
// the reflector by whatever still waits in the informer's queue: a slow index
// function or a burst of events keeps events queued, and a diff against the
// indexer would miss an object that was added and then deleted while its ADDED
// event was still queued (the object would stay in the cache as a ghost).
//
// The handed set keys objects by a 64-bit hash of namespace and name, and keeps
// colliding keys (vanishingly rare) in a second map keyed by the key itself, so
// that it costs one map slot per object and no key string.
type Handed struct {
	mu     sync.Mutex
	byHash map[uint64]runtime.Object
	spill  map[string]runtime.Object // keys whose hash another key already holds
	// MovedOut reports whether a handed object the list does not have is
	// another shard's now (WithShard); nil without sharding. See Diff.
	MovedOut func(runtime.Object) bool
	// Compact keeps a record of each handed object (its key, uid and
	// resourceVersion) instead of the object, under an encoded store (see
	// Record); lastKnown then gives the object of a record whose DELETED a
	// re-list sends, from the informer's store, or nil.
	Compact bool
	// Placeholder makes the object of a record's DELETED: an object of the
	// informer's type with the record's metadata. placeholders are those
	// handed and not yet resolved by the informer (see recordGoneAt).
	Placeholder  func(*Record) runtime.Object
	placeholders sync.Map
	// standIns are the placeholders a re-list sent for its packed changed
	// objects, each with its pack, until the informer takes it (see
	// StandIn); pendingStandIns counts them.
	standIns        sync.Map
	pendingStandIns atomic.Int64
	// sums are the digests of the fields of the objects the wire decoder
	// decoded, by the key's hash, each naming the version it is of: what a
	// new version compares its fields with (wire.Prior). An entry whose
	// version is not the handed object's is never used; entries of keys no
	// longer handed go with them (removeLocked, Replace).
	sums map[uint64]wire.FieldSums
	// sized is the number of objects byHash was last made for (Replace).
	sized int
}

var handedSeed = maphash.MakeSeed()

// NewHanded returns an empty handed set.
func NewHanded() *Handed {
	return &Handed{byHash: map[uint64]runtime.Object{}}
}

// handedHash hashes an object key given as namespace and name, for the handed
// set's index. It is not pkg/shard's KeyHash: that one must give every
// replica the same value (FNV), where this one only indexes one process's
// memory, with a seed of its own (maphash).
func handedHash(ns, name string) uint64 {
	var h maphash.Hash
	h.SetSeed(handedSeed)
	if ns != "" {
		h.WriteString(ns)
		h.WriteByte('/')
	}
	h.WriteString(name)
	return h.Sum64()
}

// handedHashBytes is handedHash of a namespace and name read from encoded bytes.
func handedHashBytes(ns, name []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(handedSeed)
	if len(ns) > 0 {
		h.Write(ns)
		h.WriteByte('/')
	}
	h.Write(name)
	return h.Sum64()
}

// identify returns an object's namespace and name.
func identify(obj runtime.Object) (ns, name string, ok bool) {
	if r, isRecord := obj.(*Record); isRecord {
		return r.Namespace, r.Name, true
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", "", false
	}
	return m.GetNamespace(), m.GetName(), true
}

func spillKey(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// getLocked returns the handed object with namespace ns and name name.
func (v *Handed) getLocked(h uint64, ns, name string) (runtime.Object, bool) {
	obj, ok := v.byHash[h]
	if !ok {
		return nil, false
	}
	if ons, oname, _ := identify(obj); ons == ns && oname == name {
		return obj, true
	}
	obj, ok = v.spill[spillKey(ns, name)]
	return obj, ok
}

// Get returns the handed object with this namespace and name.
func (v *Handed) Get(ns, name string) (runtime.Object, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.getLocked(handedHash(ns, name), ns, name)
}

// Previous returns the handed object of obj's key for sharing to compare obj
// with (shrink.Pipeline.ApplyAfter), or nil: none handed, a nil set, or an
// encoded store's, whose set keeps records.
func (v *Handed) Previous(obj runtime.Object) any {
	if v == nil || v.Compact {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	if old, ok := v.Get(m.GetNamespace(), m.GetName()); ok && old != obj {
		return old
	}
	return nil
}

// GetBytes is Get for a namespace and name read from encoded bytes; it does
// not allocate unless the key's hash collides with another key's.
func (v *Handed) GetBytes(ns, name []byte) (runtime.Object, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	obj, ok := v.byHash[handedHashBytes(ns, name)]
	if !ok {
		return nil, false
	}
	if ons, oname, _ := identify(obj); ons == string(ns) && oname == string(name) {
		return obj, true
	}
	obj, ok = v.spill[spillKey(string(ns), string(name))]
	return obj, ok
}

func (v *Handed) putLocked(obj runtime.Object) {
	ns, name, ok := identify(obj)
	if !ok {
		return
	}
	if v.Compact {
		if r := recordOf(obj); r != nil {
			obj = r
		}
	}
	h := handedHash(ns, name)
	old, taken := v.byHash[h]
	if !taken {
		v.byHash[h] = obj
		return
	}
	if ons, oname, _ := identify(old); ons == ns && oname == name {
		v.byHash[h] = obj
		return
	}
	if v.spill == nil {
		v.spill = map[string]runtime.Object{}
	}
	v.spill[spillKey(ns, name)] = obj
}

func (v *Handed) removeLocked(ns, name string) {
	h := handedHash(ns, name)
	delete(v.sums, h)
	if old, ok := v.byHash[h]; ok {
		if ons, oname, _ := identify(old); ons == ns && oname == name {
			delete(v.byHash, h)
			return
		}
	}
	delete(v.spill, spillKey(ns, name))
}

// Apply records an event the reflector has received.
func (v *Handed) Apply(ev watch.Event) {
	switch ev.Type {
	case watch.Added, watch.Modified:
		v.mu.Lock()
		v.putLocked(ev.Object)
		v.mu.Unlock()
	case watch.Deleted:
		if ns, name, ok := identify(ev.Object); ok {
			v.mu.Lock()
			v.removeLocked(ns, name)
			v.mu.Unlock()
		}
	}
}

// Replace records a list handed to the reflector, which replaces its store
// with it. The maps keep their capacity: a re-list of a store of the same size
// allocates nothing here. A list larger than any the set held makes its map
// at the list's size at once, rather than growing it one key at a time (the
// first list's garbage, which the start-up peak holds).
func (v *Handed) Replace(items []runtime.Object) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if n := len(items); n > v.sized && n > len(v.byHash) {
		v.byHash = make(map[uint64]runtime.Object, n)
		v.sized = n
	} else {
		clear(v.byHash)
	}
	v.spill = nil
	for _, obj := range items {
		v.putLocked(obj)
	}
	for h := range v.sums {
		if _, ok := v.byHash[h]; !ok {
			delete(v.sums, h)
		}
	}
}

// prior returns the handed object of id's key with the digests its fields
// were decoded with, when the digests are of that object's version.
func (v *Handed) prior(id wire.Identity) (runtime.Object, wire.FieldSums, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	h := handedHashBytes(id.Namespace, id.Name)
	sums, ok := v.sums[h]
	if !ok {
		return nil, sums, false
	}
	obj, ok := v.byHash[h]
	if !ok {
		return nil, sums, false
	}
	m, ok := obj.(interface {
		GetNamespace() string
		GetName() string
		GetUID() types.UID
		GetResourceVersion() string
	})
	if !ok || m.GetNamespace() != string(id.Namespace) || m.GetName() != string(id.Name) ||
		wire.VersionOfStrings(string(m.GetUID()), m.GetResourceVersion()) != sums.Version {
		return nil, sums, false
	}
	return obj, sums, true
}

// keepSums keeps the digests of an object the wire decoder decoded, for its
// next version (see prior).
func (v *Handed) keepSums(id wire.Identity, sums wire.FieldSums) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.sums == nil {
		v.sums = map[uint64]wire.FieldSums{}
	}
	v.sums[handedHashBytes(id.Namespace, id.Name)] = sums
}

// Changes are the watch events that turn the handed set into a new list.
type Changes struct {
	// Changed are ADDED and MODIFIED events, in resourceVersion order.
	Changed []watch.Event
	// Deleted are DELETED events for objects the list no longer has, each a
	// copy of the last handed object at the list's resourceVersion.
	Deleted []watch.Event
}

// Diff compares the handed set with items, a complete list at resourceVersion rv.
// An unchanged object is the handed object itself (the decoders reuse it), so
// any other object for a handed key is a change.
//
// The events are ordered so that the resourceVersion the reflector records
// from each event never goes backwards: changes in resourceVersion order (all
// are newer than anything the reflector has seen, since the server delivered
// every older version before the watch expired), then deletions, which carry
// the list's resourceVersion, as a DELETED event from the server carries the
// revision of the deletion rather than the object's last one.
//
// An object that went to another shard (a rebalance, WithShard) was not
// deleted: its DELETED carries the object as it was handed, with its own
// resourceVersion, so that if it comes back to this replica later, unchanged,
// its ADDED is not older than the DELETED its handlers were told. The
// reflector's resourceVersion goes back meanwhile, as it does for the objects
// that came to this replica, until the list's closing bookmark.
func (v *Handed) Diff(items []runtime.Object, rv string) Changes {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out Changes
	// matched are the hashes (and spilled keys) of handed objects the list
	// has; every other handed object was deleted.
	matched := make([]uint64, 0, len(items))
	var matchedSpill map[string]bool
	for _, obj := range items {
		ns, name, ok := identify(obj)
		if !ok {
			continue
		}
		h := handedHash(ns, name)
		old, found := v.byHash[h]
		if found {
			if ons, oname, _ := identify(old); ons != ns || oname != name {
				old, found = v.spill[spillKey(ns, name)]
				if found {
					if matchedSpill == nil {
						matchedSpill = map[string]bool{}
					}
					matchedSpill[spillKey(ns, name)] = true
				}
			} else {
				matched = append(matched, h)
			}
		}
		switch {
		case !found:
			out.Changed = append(out.Changed, watch.Event{Type: watch.Added, Object: obj})
		case old != obj:
			out.Changed = append(out.Changed, watch.Event{Type: watch.Modified, Object: obj})
		}
	}
	slices.SortStableFunc(out.Changed, func(a, b watch.Event) int { return compareRV(a.Object, b.Object) })
	if len(matched)+len(matchedSpill) == len(v.byHash)+len(v.spill) {
		return out
	}
	slices.Sort(matched)
	for h, obj := range v.byHash {
		if _, ok := slices.BinarySearch(matched, h); !ok {
			out.Deleted = append(out.Deleted, watch.Event{Type: watch.Deleted, Object: v.goneAt(obj, rv)})
		}
	}
	for k, obj := range v.spill {
		if !matchedSpill[k] {
			out.Deleted = append(out.Deleted, watch.Event{Type: watch.Deleted, Object: v.goneAt(obj, rv)})
		}
	}
	return out
}

// goneAt is the object of the DELETED event of a handed object that a list at
// rv does not have: the object itself when it went to another shard, else a
// copy at rv (see Diff).
func (v *Handed) goneAt(obj runtime.Object, rv string) runtime.Object {
	if r, ok := obj.(*Record); ok {
		return v.recordGoneAt(r, rv)
	}
	if v.MovedOut != nil && v.MovedOut(obj) {
		return obj
	}
	return deletedAt(obj, rv)
}

// recordGoneAt is goneAt for a record: a placeholder of the informer's type
// with the record's metadata, at rv unless the object went to another shard.
// The informer (package informer, Options.LastStored) hands its handlers the
// object its store holds instead, when it applies the deletion: only then,
// in the order of its queue, does the store hold the last object the
// handlers were told, as client-go's re-list hands them the store's last
// object of a deleted key.
func (v *Handed) recordGoneAt(r *Record, rv string) runtime.Object {
	obj := v.Placeholder(r)
	if v.MovedOut == nil || !v.MovedOut(obj) {
		if m, err := meta.Accessor(obj); err == nil {
			m.SetResourceVersion(rv)
		}
	}
	v.placeholders.Store(obj, struct{}{})
	return obj
}

// LastStored reports whether obj is a placeholder of recordGoneAt, and
// forgets it: the informer resolves each once, and a re-list cut short
// forgets those it did not send. Forgetting them at the next list instead
// could forget one still waiting in the informer's queue.
func (v *Handed) LastStored(obj any) bool {
	_, ok := v.placeholders.LoadAndDelete(obj)
	return ok
}

// StandIn returns the object a re-list inside the watch sends for a packed
// changed object: a placeholder of the informer's type with its metadata
// (the reflector takes only objects of that type in a watch), which the
// informer resolves to the pack when it applies it (Packed). The informer's
// queue then holds metadata, not the object decoded, however many changes
// the re-list brings.
func (v *Handed) StandIn(packed runtime.Object) runtime.Object {
	obj := v.Placeholder(recordOf(packed))
	v.pendingStandIns.Add(1)
	v.standIns.Store(obj, packed)
	return obj
}

// Packed returns the pack obj stands in for (StandIn); take forgets it, for
// the informer applying it once.
func (v *Handed) Packed(obj any, take bool) (any, bool) {
	if !take {
		return v.standIns.Load(obj)
	}
	return v.forgetStandIn(obj)
}

func (v *Handed) forgetStandIn(obj any) (any, bool) {
	packed, ok := v.standIns.LoadAndDelete(obj)
	if ok {
		v.pendingStandIns.Add(-1)
	}
	return packed, ok
}

// standInsPending is the number of stand-ins sent and not yet taken by the
// informer: 0 once it has applied every packed change of a re-list.
func (v *Handed) standInsPending() int64 { return v.pendingStandIns.Load() }

// unsent forgets what a re-list made for an event it did not send: a
// deletion's placeholder or a stand-in.
func (v *Handed) unsent(obj runtime.Object) {
	v.LastStored(obj)
	v.forgetStandIn(obj)
}

// compareRV orders objects by resourceVersion; versions that are not integers
// (the API treats them as opaque strings) compare equal, keeping list order.
func compareRV(a, b runtime.Object) int {
	am, err1 := meta.Accessor(a)
	bm, err2 := meta.Accessor(b)
	if err1 != nil || err2 != nil {
		return 0
	}
	c, err := resourceversion.CompareResourceVersion(am.GetResourceVersion(), bm.GetResourceVersion())
	if err != nil {
		return 0
	}
	return c
}

// deletedAt returns a copy of a deleted object whose resourceVersion is rv, the
// list's: the reflector records the resourceVersion of every event it gets.
// Handed objects are shared with the cache and never changed in place, so the
// copy shares all but its metadata with obj (see metaCopy).
func deletedAt(obj runtime.Object, rv string) runtime.Object {
	c := metaCopy(obj)
	if m, err := meta.Accessor(c); err == nil {
		m.SetResourceVersion(rv)
	}
	return c
}

// Counts returns how many of the handed objects are kept as records (under
// an encoded store) and how many whole; for tests.
func (v *Handed) Counts() (records, objects int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	count := func(obj any) {
		if _, ok := obj.(*Record); ok {
			records++
		} else {
			objects++
		}
	}
	for _, obj := range v.byHash {
		count(obj)
	}
	for _, obj := range v.spill {
		count(obj)
	}
	return records, objects
}
