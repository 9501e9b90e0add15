package leanstore

import (
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/encstore"
	"github.com/cachetune/cachetune/internal/heapsize"
)

// Census is a count of what one informer's store holds.
type Census struct {
	Informer string `json:"informer"`
	Resource string `json:"resource"`
	Objects  int    `json:"objects"`
	// EstimatedBytes is an estimate of the heap the store holds: the mean size of a
	// sample of objects (every allocation they reference, rounded up to Go's size
	// classes, strings shared between sampled objects counted once) times Objects,
	// plus the store's own per-object overhead.
	EstimatedBytes int64   `json:"estimatedBytes"`
	BytesPerObject float64 `json:"bytesPerObject"`
	Sampled        int     `json:"sampled"`
	// Shard says whose share of the objects these are (WithShard); nil
	// without sharding.
	Shard *ShardCensus `json:"shard,omitempty"`
}

// censusSample is how many objects a census sizes. Sizing walks each object with
// reflection (tens of microseconds for a Pod), so a census costs about a
// millisecond whatever the store's size, cheap enough to run at every scrape.
const censusSample = 64

// storeOverhead is what client-go's store adds per object beyond the object
// and the bytes of its key: the key string, the items-map slot and the
// namespace-index entry.
const storeOverhead = 96

// storeEntry is the store's per-object cost beside the object: its key, of
// keyBytes, and the entry that holds it.
func storeEntry(keyBytes float64) float64 { return keyBytes + storeOverhead }

// Census counts the informer's objects and estimates the heap they hold.
func (i *Informer) Census() Census {
	var c Census
	if st, ok := i.encodedStats(); ok {
		c = encodedCensus(st, i.GetIndexer().ListKeys())
	} else {
		c = censusOf(i.GetIndexer())
	}
	c.Informer, c.Resource = i.name, i.resource.String()
	if i.lw != nil {
		c.Shard = i.shard.Census()
	}
	return c
}

// censusOf sizes an evenly spread sample of a store's objects.
func censusOf(store cache.Store) Census {
	keys := store.ListKeys()
	c := Census{Objects: len(keys)}
	if len(keys) == 0 {
		return c
	}
	step := max(1, len(keys)/censusSample)
	s := heapsize.NewSizer()
	var keyBytes int
	for k := 0; k < len(keys) && c.Sampled < censusSample; k += step {
		obj, ok, _ := store.GetByKey(keys[k])
		if !ok {
			continue
		}
		s.Object(obj)
		keyBytes += len(keys[k])
		c.Sampled++
	}
	if c.Sampled == 0 {
		return c
	}
	c.BytesPerObject = s.PerObject(len(keys)) + storeEntry(float64(keyBytes)/float64(c.Sampled))
	c.EstimatedBytes = int64(c.BytesPerObject * float64(c.Objects))
	return c
}

// EstimateBytesPerObject estimates the heap a cache of n objects like sample,
// with store keys of meanKeyBytes on average, would take per object, the way
// Census does: memory the sampled objects share (interned strings, shared
// parts) counts once, the rest per object, and the store's key and entry are
// added.
func EstimateBytesPerObject(sample []any, n int, meanKeyBytes float64) float64 {
	s := heapsize.NewSizer()
	for _, obj := range sample {
		s.Object(obj)
	}
	return s.PerObject(n) + storeEntry(meanKeyBytes)
}

// encodedEntry is what an encoded store (WithEncodedStore) keeps per object
// beside its kept bytes and key: the entry (bytes, resourceVersion, index
// values) and, in the handed set, the object's record (see reflector.Record), whose uid and
// resourceVersion strings are its own. A decode-free estimate: sampling
// objects as censusOf does would decode them, and size what the store does
// not hold.
const encodedEntry = 64 + 64 + 48 + 16 + 24

// encodedCensus estimates an encoded store's heap from its statistics and
// keys, without decoding anything.
func encodedCensus(st encstore.Stats, keys []string) Census {
	c := Census{Objects: st.Objects}
	if c.Objects == 0 {
		return c
	}
	step := max(1, len(keys)/censusSample)
	var keyBytes int
	for k := 0; k < len(keys) && c.Sampled < censusSample; k += step {
		keyBytes += len(keys[k])
		c.Sampled++
	}
	meanKey := 0.0
	if c.Sampled > 0 {
		meanKey = float64(keyBytes) / float64(c.Sampled)
	}
	perObject := float64(st.KeptBytes)/float64(c.Objects) + storeEntry(meanKey) + encodedEntry + meanKey
	c.EstimatedBytes = int64(perObject*float64(c.Objects)) + int64(st.DictBytes) + st.HotBytes
	c.BytesPerObject = float64(c.EstimatedBytes) / float64(c.Objects)
	return c
}
