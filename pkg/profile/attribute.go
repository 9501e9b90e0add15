package profile

import (
	"regexp"

	"github.com/google/pprof/profile"
)

// Bucket names a share of the heap by the functions on the allocating stack.
type Bucket struct {
	// Name is what the bucket is reported as.
	Name string
	// Match is tested against the function names of a sample's frames,
	// fully qualified as pprof shows them, e.g.
	// "k8s.io/client-go/tools/cache.(*threadSafeMap).Add".
	Match *regexp.Regexp
}

// OtherBucket receives the bytes no bucket matches.
const OtherBucket = "other"

// DefaultBuckets returns the buckets cachebench reports, in the order they
// are tried at each frame:
//
//   - decode: bytes read from the API server and the objects decoded from
//     them (runtime serializers, encoding/json, protobuf Unmarshal, the REST
//     client reading a response, the watch stream decoder). Objects held in
//     an informer's store were allocated here, so the store's contents count
//     as decode unless a transform copied them.
//   - store: the informer's indexer and queue (threadSafeMap and its
//     indices, DeltaFIFO, RealFIFO): map buckets, index sets, delta slices.
//   - transform: cachetune's leanstore package, the shrink pipeline it runs
//     each object through (internal/shrink), the parts of its list/watch loop
//     that moved out of it (internal/reflector), and any function whose name
//     begins with Transform or strip (in either case), such as
//     controller-runtime's TransformStripManagedFields.
//   - watch: the rest of the list and watch machinery (reflector, pager,
//     watch package, meta.ExtractList).
//
// Everything else goes to OtherBucket.
func DefaultBuckets() []Bucket {
	return []Bucket{
		{Name: "decode", Match: regexp.MustCompile(`^(k8s\.io/apimachinery/pkg/runtime/serializer|k8s\.io/apimachinery/pkg/util/framer|encoding/json\.|sigs\.k8s\.io/json|github\.com/json-iterator/|google\.golang\.org/protobuf/|github\.com/gogo/protobuf/|github\.com/fxamacker/cbor/|k8s\.io/client-go/rest\.\(\*Request\)\.transformResponse|k8s\.io/client-go/rest/watch\.)|\.Unmarshal$`)},
		{Name: "store", Match: regexp.MustCompile(`^k8s\.io/client-go/tools/cache\.(\(\*(threadSafeMap|storeIndex|cache|DeltaFIFO|RealFIFO)\)|NewThreadSafeStore|NewDeltaFIFO|NewRealFIFO)`)},
		{Name: "transform", Match: regexp.MustCompile(`^github\.com/cachetune/cachetune/(pkg/leanstore|internal/shrink|internal/reflector)|\.(?i:transform|strip)[^./]*(\.func\d+(\.\d+)*)?$`)},
		{Name: "watch", Match: regexp.MustCompile(`^(k8s\.io/client-go/tools/cache\.(\(\*Reflector\)|handle\w*Watch|watchHandler)|k8s\.io/client-go/tools/pager|k8s\.io/client-go/tools/watch|k8s\.io/apimachinery/pkg/watch|k8s\.io/apimachinery/pkg/api/meta\.(ExtractList|EachListItem))`)},
	}
}

// BucketBytes is the in-use memory attributed to one bucket.
type BucketBytes struct {
	Name    string
	Bytes   int64
	Objects int64
}

// Attribution is the in-use memory of a heap profile, or the change between
// two, split into buckets.
type Attribution struct {
	// Buckets follows the order of the buckets passed to Attribute, with
	// OtherBucket last unless it was one of them.
	Buckets []BucketBytes
	// Total is the sum over all buckets.
	Total BucketBytes
}

// Bytes returns the bytes of the named bucket, 0 when there is none.
func (a Attribution) Bytes(name string) int64 {
	for _, b := range a.Buckets {
		if b.Name == name {
			return b.Bytes
		}
	}
	return 0
}

// Attribute splits the in-use memory (inuse_space and inuse_objects) that
// after holds and before did not into buckets: where a re-list's spike went.
// before may be nil to split after on its own; a bucket can go negative when
// memory of its kind was freed in between.
//
// Each sample goes to one bucket: its frames are walked from the allocation
// site towards the root, and the first frame some bucket matches decides,
// buckets being tried in order at each frame. The innermost match wins
// because it is the most specific: a transform's copies are allocated inside
// DeltaFIFO, and count as transform, not store. Memory is attributed to
// where it was allocated, not to who holds it now.
//
// A profile without inuse sample types (not a heap profile) adds nothing.
func Attribute(before, after *profile.Profile, buckets []Bucket) Attribution {
	a := Attribution{}
	other := -1
	for i, b := range buckets {
		a.Buckets = append(a.Buckets, BucketBytes{Name: b.Name})
		if b.Name == OtherBucket && other < 0 {
			other = i
		}
	}
	if other < 0 {
		other = len(a.Buckets)
		a.Buckets = append(a.Buckets, BucketBytes{Name: OtherBucket})
	}
	add := func(p *profile.Profile, sign int64) {
		if p == nil {
			return
		}
		space, objects := sampleIndex(p, "inuse_space"), sampleIndex(p, "inuse_objects")
		if space < 0 {
			return
		}
		cls := classifier{buckets: buckets, other: other, seen: map[*profile.Location]int{}}
		for _, s := range p.Sample {
			b := &a.Buckets[cls.sample(s)]
			b.Bytes += sign * s.Value[space]
			if objects >= 0 {
				b.Objects += sign * s.Value[objects]
			}
		}
	}
	add(before, -1)
	add(after, 1)
	for _, b := range a.Buckets {
		a.Total.Bytes += b.Bytes
		a.Total.Objects += b.Objects
	}
	a.Total.Name = "total"
	return a
}

// sampleIndex is the position of the sample type typ, -1 if absent.
func sampleIndex(p *profile.Profile, typ string) int {
	for i, st := range p.SampleType {
		if st.Type == typ {
			return i
		}
	}
	return -1
}

// classifier assigns samples to buckets, remembering each location's answer:
// a heap profile has thousands of samples over far fewer locations.
type classifier struct {
	buckets []Bucket
	other   int
	seen    map[*profile.Location]int // bucket index, or -1 for no match
}

func (c *classifier) sample(s *profile.Sample) int {
	for _, loc := range s.Location {
		if b := c.location(loc); b >= 0 {
			return b
		}
	}
	return c.other
}

// location returns the bucket of the innermost matching function at loc: its
// lines run from the innermost inlined function outwards.
func (c *classifier) location(loc *profile.Location) int {
	if b, ok := c.seen[loc]; ok {
		return b
	}
	b := -1
lines:
	for _, l := range loc.Line {
		if l.Function == nil {
			continue
		}
		for i, bk := range c.buckets {
			if bk.Match != nil && bk.Match.MatchString(l.Function.Name) {
				b = i
				break lines
			}
		}
	}
	c.seen[loc] = b
	return b
}
