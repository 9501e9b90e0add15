package encstore

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// hotCache keeps the objects read last, decoded, up to a budget in bytes, and
// evicts the least recently read first. It is keyed by store key and checked
// against the version the store holds: the kept bytes themselves (their first
// byte's address), which change with every stored change, resourceVersion or
// not, and which the cache's item keeps alive so that the address cannot be
// reused. An object that changed is never served from it.
//
// Unless reads are shared (SharedReads), its objects are never handed out
// while cached: a hit returns a deep copy (copyOf), which the caller owns as
// it would own a freshly decoded object, and take hands an object out only
// once it has left the cache and nobody is copying it.
type hotCache struct {
	mu     sync.Mutex
	budget int64
	used   int64
	items  map[string]*hotItem
	// head is the most recently read item, head.prev the least recently read
	// (a circular list through a sentinel).
	head hotItem
	// hits and misses count lookups, for Stats.
	hits, misses uint64
}

type hotItem struct {
	key  string
	ver  *byte
	obj  runtime.Object
	size int64
	// copying counts the readers copying obj outside the lock: take does
	// not hand obj out while they read it.
	copying    int
	prev, next *hotItem
}

func newHotCache(budget int64) *hotCache {
	h := &hotCache{budget: budget, items: map[string]*hotItem{}}
	h.head.prev, h.head.next = &h.head, &h.head
	return h
}

// get returns the cached object of key at version ver itself, for shared
// reads: nobody may change it.
func (h *hotCache) get(key string, ver *byte) (runtime.Object, bool) {
	if h == nil {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	it := h.lookupLocked(key, ver)
	if it == nil {
		return nil, false
	}
	return it.obj, true
}

// copyOf returns a deep copy of the cached object of key at version ver,
// which the caller owns. The copy is made outside the lock, so that readers
// of different objects do not wait for each other.
func (h *hotCache) copyOf(key string, ver *byte) (runtime.Object, bool) {
	if h == nil {
		return nil, false
	}
	h.mu.Lock()
	it := h.lookupLocked(key, ver)
	if it == nil {
		h.mu.Unlock()
		return nil, false
	}
	it.copying++
	h.mu.Unlock()
	obj := it.obj.DeepCopyObject()
	h.mu.Lock()
	it.copying--
	h.mu.Unlock()
	return obj, true
}

// lookupLocked returns the item of key at version ver, counted as a hit and
// made the most recently read, or nil, counted as a miss. Called with h.mu
// held.
func (h *hotCache) lookupLocked(key string, ver *byte) *hotItem {
	it, ok := h.items[key]
	if !ok || it.ver != ver {
		h.misses++
		return nil
	}
	h.hits++
	h.unlink(it)
	h.pushFront(it)
	return it
}

// put caches obj, which nobody else may hold, as key at version ver.
func (h *hotCache) put(key string, ver *byte, obj runtime.Object, size int64) {
	if h == nil || size > h.budget {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.items[key]; ok {
		h.removeLocked(old)
	}
	it := &hotItem{key: key, ver: ver, obj: obj, size: size}
	h.items[key] = it
	h.pushFront(it)
	h.used += size
	for h.used > h.budget {
		h.removeLocked(h.head.prev)
	}
}

// take removes key's object and returns it, when it is cached at version
// ver: the caller then owns it (under shared reads, with every reader that
// got it). While a reader is copying it, it returns nothing (the caller
// decodes its own): the new owner may change what the reader is reading.
func (h *hotCache) take(key string, ver *byte) (runtime.Object, bool) {
	if h == nil {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	it, ok := h.items[key]
	if !ok {
		return nil, false
	}
	h.removeLocked(it)
	if it.ver != ver || it.copying > 0 {
		return nil, false
	}
	return it.obj, true
}

// drop forgets key.
func (h *hotCache) drop(key string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if it, ok := h.items[key]; ok {
		h.removeLocked(it)
	}
}

func (h *hotCache) stats() (used int64, n int, hits, misses uint64) {
	if h == nil {
		return 0, 0, 0, 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.used, len(h.items), h.hits, h.misses
}

func (h *hotCache) removeLocked(it *hotItem) {
	h.unlink(it)
	delete(h.items, it.key)
	h.used -= it.size
}

func (h *hotCache) unlink(it *hotItem) {
	it.prev.next = it.next
	it.next.prev = it.prev
	it.prev, it.next = nil, nil
}

func (h *hotCache) pushFront(it *hotItem) {
	it.prev = &h.head
	it.next = h.head.next
	h.head.next.prev = it
	h.head.next = it
}
