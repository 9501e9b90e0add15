package encstore

import (
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgofeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
)

// Store is a cache.Indexer that keeps each object as its encoded, compressed
// bytes and decodes it on every read. See the package documentation.
type Store struct {
	reader
	keyFunc cache.KeyFunc
	encoded func(obj any) ([]byte, bool)

	mu    sync.RWMutex
	items map[string]entry
	index *index
	rv    string
}

var _ cache.Indexer = (*Store)(nil)

// prepared is an object ready to be stored: its key, and its entry (but for
// the index values, which are computed under the store's lock, where the
// indexers cannot change).
type prepared struct {
	key   string
	obj   runtime.Object
	e     entry
	train bool
}

// prepare encodes obj (or takes the bytes in hand, data or Options.Encoded)
// and compresses it. It runs outside the store's lock.
func (s *Store) prepare(obj any, data []byte) (prepared, error) {
	key, err := s.keyFunc(obj)
	if err != nil {
		return prepared{}, cache.KeyError{Obj: obj, Err: err}
	}
	ro, ok := obj.(runtime.Object)
	if !ok {
		return prepared{}, fmt.Errorf("encstore: cannot keep %s: %T is not a runtime.Object", key, obj)
	}
	rv := ""
	if m, err := meta.Accessor(obj); err == nil {
		rv = m.GetResourceVersion()
	}
	if data == nil && s.encoded != nil {
		data, _ = s.encoded(obj)
	}
	var buf []byte
	if data == nil {
		b := s.getBuf()
		buf, err = s.codec.Encode((*b)[:0], ro)
		if err != nil {
			s.putBuf(b)
			return prepared{}, fmt.Errorf("encstore: encode %s: %w", key, err)
		}
		data = buf
		defer func() { *b = buf; s.putBuf(b) }()
	}
	kept, train := s.comp.compress(data)
	return prepared{key: key, obj: ro, e: entry{data: kept, rv: rv}, train: train}, nil
}

// store puts p under its key and returns the entry it replaced. It holds the
// lock.
func (s *Store) storeLocked(p prepared) (old entry, existed bool, err error) {
	values, err := s.index.values(p.key, p.obj)
	if err != nil {
		return entry{}, false, err
	}
	p.e.values = values
	if p.e.data[0] == formatPlain {
		// Stored plain while the dictionary was being trained: the pass
		// that compresses such objects (afterStore) may have run already.
		p.e.data = s.comp.recompress(p.e.data)
	}
	old, existed = s.items[p.key]
	s.items[p.key] = p.e
	s.index.update(p.key, old.values, p.e.values)
	return old, existed, nil
}

// afterStore trains the dictionary when enough objects were collected, and
// compresses with it the objects kept plain until then. An object kept plain
// by a writer that raced with the training is compressed when it is stored,
// if the dictionary exists by then (storeLocked), or by this pass, which
// starts after the dictionary exists and holds the lock.
func (s *Store) afterStore(train bool) {
	if !train || !s.comp.trainDict() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.items {
		if d := s.comp.recompress(e.data); &d[0] != &e.data[0] {
			e.data = d
			s.items[k] = e
		}
	}
}

// Add adds obj, encoding it.
func (s *Store) Add(obj any) error { return s.Update(obj) }

// Update adds or replaces obj, encoding it.
func (s *Store) Update(obj any) error {
	_, _, _, err := s.put(obj, nil, false)
	return err
}

// AddEncoded adds or replaces obj, keeping data as its encoding instead of
// encoding obj: data must be what the store's codec would encode obj to (for
// Protobuf, the object's bare message, as one item of a protobuf list carries
// it). The store compresses or copies data: the caller may reuse it.
func (s *Store) AddEncoded(obj any, data []byte) error {
	if data == nil {
		data = []byte{}
	}
	_, _, _, err := s.put(obj, data, false)
	return err
}

// Upsert adds or replaces obj, as Update does, and reports what it replaced:
// existed is false when the key held nothing; otherwise oldRV is the replaced
// object's resourceVersion, and old returns it decoded and owned by the caller
// (taken from the hot cache when it was there, so not decoded again; under
// SharedReads readers may hold that object too).
//
// Unlike Update, when the key holds an object of the same non-empty
// resourceVersion, Upsert keeps the bytes it has and does not encode obj: an
// informer's objects come from the API server, which gives every write a
// resourceVersion of its own, so a re-list of unchanged objects costs no
// encoding.
func (s *Store) Upsert(obj any) (existed bool, oldRV string, old func() (any, error), err error) {
	return s.put(obj, nil, true)
}

func (s *Store) put(obj any, data []byte, keepSame bool) (existed bool, oldRV string, old func() (any, error), err error) {
	if keepSame {
		if key, rv, ok := s.identify(obj); ok {
			if old, same := s.keptSame(key, rv); same {
				return true, rv, old, nil
			}
		}
	}
	p, err := s.prepare(obj, data)
	if err != nil {
		return false, "", nil, err
	}
	return s.putPrepared(obj, p, false)
}

// keptSame reports whether key holds an object of the non-empty
// resourceVersion rv, and returns the function that decodes it.
func (s *Store) keptSame(key, rv string) (old func() (any, error), same bool) {
	e, held := s.held(key, rv)
	if !held {
		return nil, false
	}
	s.setRV(rv)
	return s.decoder(key, e), true
}

// held returns the entry of key when it is of the non-empty
// resourceVersion rv.
func (s *Store) held(key, rv string) (entry, bool) {
	if rv == "" {
		return entry{}, false
	}
	s.mu.RLock()
	e, found := s.items[key]
	s.mu.RUnlock()
	if !found || e.rv != rv {
		return entry{}, false
	}
	return e, true
}

// putPrepared stores p, the prepared obj, and reports what it replaced as
// Upsert does; keepSame keeps the bytes the store has for p's key when they
// are of p's resourceVersion.
func (s *Store) putPrepared(obj any, p prepared, keepSame bool) (existed bool, oldRV string, old func() (any, error), err error) {
	if keepSame {
		if old, same := s.keptSame(p.key, p.e.rv); same {
			return true, p.e.rv, old, nil
		}
	}
	s.mu.Lock()
	prev, existed, err := s.storeLocked(p)
	if err == nil && metaOK(obj) {
		s.rv = p.e.rv // as client-go's store: the rv of every object stored, even empty
	}
	s.mu.Unlock()
	if err != nil {
		return false, "", nil, err
	}
	var cached runtime.Object
	if existed {
		cached, _ = s.hot.take(p.key, prev.version())
	} else {
		s.hot.drop(p.key)
	}
	s.afterStore(p.train)
	if !existed {
		return false, "", nil, nil
	}
	if cached != nil {
		return true, prev.rv, func() (any, error) { return cached, nil }, nil
	}
	return true, prev.rv, s.decoder(p.key, prev), nil
}

// metaOK reports whether obj has object metadata: client-go's store then
// records its resourceVersion, even an empty one.
func metaOK(obj any) bool {
	_, err := meta.Accessor(obj)
	return err == nil
}

func (s *Store) identify(obj any) (key, rv string, ok bool) {
	key, err := s.keyFunc(obj)
	if err != nil {
		return "", "", false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", "", false
	}
	return key, m.GetResourceVersion(), true
}

func (s *Store) setRV(rv string) {
	s.mu.Lock()
	s.rv = rv
	s.mu.Unlock()
}

// decoder returns a function that decodes e, for an object the caller owns.
func (s *Store) decoder(key string, e entry) func() (any, error) {
	return func() (any, error) {
		obj, err := s.decode(key, e)
		if err != nil {
			return nil, err
		}
		return obj, nil
	}
}

// Delete removes obj's key.
func (s *Store) Delete(obj any) error {
	key, err := s.keyFunc(obj)
	if err != nil {
		return cache.KeyError{Obj: obj, Err: err}
	}
	s.mu.Lock()
	if e, ok := s.items[key]; ok {
		s.index.update(key, e.values, nil)
		delete(s.items, key)
	}
	if m, err := meta.Accessor(obj); err == nil {
		s.rv = m.GetResourceVersion()
	}
	s.mu.Unlock()
	s.hot.drop(key)
	return nil
}

// Replace replaces the store's contents with list, encoding each object. It
// changes the store in place, one object at a time, rather than building a
// second store beside the first: at no time does it hold two encodings of
// an object, and objects whose resourceVersion did not change keep their
// bytes without being encoded again.
func (s *Store) Replace(list []any, resourceVersion string) error {
	seen := make(map[string]struct{}, len(list))
	for _, obj := range list {
		key, err := s.keyFunc(obj)
		if err != nil {
			return cache.KeyError{Obj: obj, Err: err}
		}
		seen[key] = struct{}{}
	}
	for _, obj := range list {
		if _, _, _, err := s.put(obj, nil, true); err != nil {
			return err
		}
	}
	s.mu.Lock()
	var gone []string
	for key, e := range s.items {
		if _, ok := seen[key]; !ok {
			s.index.update(key, e.values, nil)
			delete(s.items, key)
			gone = append(gone, key)
		}
	}
	s.rv = resourceVersion
	s.mu.Unlock()
	for _, key := range gone {
		s.hot.drop(key)
	}
	return nil
}

// Resync does nothing, as in client-go's store.
func (s *Store) Resync() error { return nil }

// LastStoreSyncResourceVersion returns the resourceVersion of the last object
// stored or deleted, or of the last Replace or Bookmark; empty unless
// client-go's AtomicFIFO feature is on, as client-go's store does.
func (s *Store) LastStoreSyncResourceVersion() string {
	if !clientgofeatures.FeatureGates().Enabled(clientgofeatures.AtomicFIFO) {
		return ""
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rv
}

// Bookmark records rv as the store's resourceVersion.
func (s *Store) Bookmark(rv string) { s.setRV(rv) }

// Get returns the object with obj's key, decoded for the caller.
func (s *Store) Get(obj any) (item any, exists bool, err error) {
	key, err := s.keyFunc(obj)
	if err != nil {
		return nil, false, cache.KeyError{Obj: obj, Err: err}
	}
	return s.GetByKey(key)
}

// GetByKey returns the object with key, decoded for the caller: a copy of the
// hot cache's object when it holds this version (the object itself under
// SharedReads), else a new decode, which the hot cache then keeps.
func (s *Store) GetByKey(key string) (item any, exists bool, err error) {
	s.mu.RLock()
	e, ok := s.items[key]
	s.mu.RUnlock()
	if !ok {
		return nil, false, nil
	}
	obj, err := s.read(key, e, true)
	if err != nil {
		return nil, true, err
	}
	return obj, true, nil
}

// List returns every object, each decoded for the caller. An object that
// cannot be decoded (which only a faulty codec can cause) is left out; see
// ListErr.
func (s *Store) List() []any {
	out, _ := s.ListErr()
	return out
}

// ListErr is List, with the error of the first object that could not be
// decoded.
func (s *Store) ListErr() ([]any, error) {
	s.mu.RLock()
	es := make([]keyed, 0, len(s.items))
	for k, e := range s.items {
		es = append(es, keyed{k, e})
	}
	s.mu.RUnlock()
	out := make([]any, 0, len(es))
	var first error
	for _, k := range es {
		obj, err := s.read(k.key, k.e, false)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		out = append(out, obj)
	}
	return out, first
}

// ListKeys returns every key.
func (s *Store) ListKeys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := make([]string, 0, len(s.items))
	for k := range s.items {
		keys = append(keys, k)
	}
	return keys
}

// Index returns the objects that share an index value with obj on the named
// index, each decoded for the caller.
func (s *Store) Index(indexName string, obj any) ([]any, error) {
	s.mu.RLock()
	keys, err := s.index.keysFor(indexName, obj)
	if err != nil {
		s.mu.RUnlock()
		return nil, err
	}
	es := s.snapshotLocked(keys)
	s.mu.RUnlock()
	return s.decodeAll(es)
}

// ByIndex returns the objects whose values on the named index include
// indexedValue, each decoded for the caller.
func (s *Store) ByIndex(indexName, indexedValue string) ([]any, error) {
	s.mu.RLock()
	keys, err := s.index.keysOf(indexName, indexedValue)
	if err != nil {
		s.mu.RUnlock()
		return nil, err
	}
	es := s.snapshotLocked(keys)
	s.mu.RUnlock()
	return s.decodeAll(es)
}

func (s *Store) snapshotLocked(keys map[string]struct{}) []keyed {
	es := make([]keyed, 0, len(keys))
	for k := range keys {
		es = append(es, keyed{k, s.items[k]})
	}
	return es
}

// IndexKeys returns the keys of the objects whose values on the named index
// include indexedValue.
func (s *Store) IndexKeys(indexName, indexedValue string) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys, err := s.index.keysOf(indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// ListIndexFuncValues returns every value of the named index.
func (s *Store) ListIndexFuncValues(indexName string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.index.valuesOf(indexName)
}

// GetIndexers returns the store's indexers.
func (s *Store) GetIndexers() cache.Indexers {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.index.indexers()
}

// AddIndexers adds indexes, computing their values for the objects already
// stored (each decoded once, here).
func (s *Store) AddIndexers(newIndexers cache.Indexers) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.index.add(newIndexers); err != nil {
		return err
	}
	// Compute every object's values first, so that a failing index function
	// leaves the store as it was.
	values := make(map[string][][]string, len(s.items))
	for key, e := range s.items {
		obj, err := s.decode(key, e)
		if err == nil {
			values[key], err = s.index.values(key, obj)
		}
		if err != nil {
			s.index.remove(newIndexers)
			return err
		}
	}
	for key, v := range values {
		e := s.items[key]
		s.index.update(key, e.values, v)
		e.values = v
		s.items[key] = e
	}
	return nil
}
