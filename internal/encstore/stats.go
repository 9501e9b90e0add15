package encstore

// Stats describe what a Store holds and how its reads were served.
type Stats struct {
	// Objects is the number of objects kept.
	Objects int
	// KeptBytes is the size of their kept bytes (compressed, when they are).
	KeptBytes int64
	// Compression is the store's compression.
	Compression Compression
	// DictBytes is the size of the trained dictionary, 0 before training or
	// without one; DictError says why training failed, if it did (the store
	// then compresses without a dictionary).
	DictBytes int
	DictError string
	// HotObjects and HotBytes are what the hot cache holds (HotBytes is its
	// estimate of their heap), HotHits and HotMisses how its lookups went.
	HotObjects         int
	HotBytes           int64
	HotHits, HotMisses uint64
	// Decodes counts the objects decoded since the store was made.
	Decodes uint64
}

// Stats returns the store's statistics. It walks every kept object: call it
// to report, not on a hot path.
func (s *Store) Stats() Stats {
	st := Stats{Compression: s.comp.mode, Decodes: s.decodes.Load()}
	s.mu.RLock()
	st.Objects = len(s.items)
	for _, e := range s.items {
		st.KeptBytes += int64(len(e.data))
	}
	s.mu.RUnlock()
	d, err := s.comp.dictionary()
	st.DictBytes = len(d)
	if err != nil {
		st.DictError = err.Error()
	}
	st.HotBytes, st.HotObjects, st.HotHits, st.HotMisses = s.hot.stats()
	return st
}
