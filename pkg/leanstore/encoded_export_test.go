package leanstore

// ViewForTest counts what the informer's handed set (the record of handed
// objects that re-lists diff against) holds: records and whole objects.
func (i *Informer) ViewForTest() (records, objects int) {
	return i.handed.Counts()
}

// EncodedStatsForTest says whether the informer keeps its objects in an
// encoded store, and how many it keeps.
func (i *Informer) EncodedStatsForTest() (objects int, ok bool) {
	st, ok := i.encodedStats()
	return st.Objects, ok
}
