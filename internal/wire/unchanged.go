package wire

import (
	"errors"
	"hash/maphash"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
)

// Prior is a Caller that keeps, for each object it holds, the digests of the
// object's top-level fields as they were encoded (FieldSums), so that a new
// version whose field is encoded exactly as the held version's was takes the
// held version's field instead of decoding it: a Pod's spec, when a status
// patch or a label changed the Pod. The decoder shares the field between
// the two versions or deep-copies it, as the caller asks
// (Decoder.TakeUnchanged): sharing only where its cache shares unchanged
// parts between versions already (leanstore's sharing).
type Prior interface {
	// Prior returns the held version of id's object and the digests it was
	// decoded with, when the digests are that version's.
	Prior(id Identity) (obj runtime.Object, sums FieldSums, ok bool)
	// Decoded keeps the digests of an object just decoded and finished, for
	// its next version.
	Decoded(id Identity, sums FieldSums)
}

// maxSums is how many top-level fields of an object are digested: a
// Kubernetes object has its spec and its status, at most a few more.
const maxSums = 2

// minSummed is the shortest encoded field worth a digest: below it, decoding
// costs about as much as hashing.
const minSummed = 64

// FieldSums are the digests of an object's encoded top-level fields (but its
// metadata), and of the version (uid and resourceVersion) they were read
// from.
type FieldSums struct {
	Version uint64
	n       uint8
	fields  [maxSums]fieldSum
}

type fieldSum struct {
	num protowire.Number
	sum [2]uint64 // two seeds: 128 bits
}

var (
	versionSeed          = maphash.MakeSeed()
	sumSeedA, sumSeedB   = maphash.MakeSeed(), maphash.MakeSeed()
	takePlans            sync.Map // reflect.Type -> *takePlan
	errDuplicateTopField = errors.New("a top-level field twice")
)

// VersionOf is the digest of a uid and a resourceVersion, which FieldSums
// carry to say which version of an object they are of.
func VersionOf(uid, resourceVersion []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(versionSeed)
	h.Write(uid)
	h.WriteByte(0)
	h.Write(resourceVersion)
	return h.Sum64()
}

// VersionOfStrings is VersionOf for a uid and a resourceVersion read from a
// decoded object; the strings are only read.
func VersionOfStrings(uid, resourceVersion string) uint64 {
	return VersionOf(unsafe.Slice(unsafe.StringData(uid), len(uid)), unsafe.Slice(unsafe.StringData(resourceVersion), len(resourceVersion)))
}

func (s *FieldSums) add(num protowire.Number, v []byte) fieldSum {
	f := fieldSum{num: num, sum: [2]uint64{maphash.Bytes(sumSeedA, v), maphash.Bytes(sumSeedB, v)}}
	if int(s.n) < maxSums {
		s.fields[s.n] = f
		s.n++
	}
	return f
}

func (s *FieldSums) has(f fieldSum) bool {
	for _, g := range s.fields[:s.n] {
		if g == f {
			return true
		}
	}
	return false
}

// takePlan maps a type's top-level fields that may be taken from a held
// version to their Go fields: single (not repeated) message fields, a struct
// or a pointer to one, but the metadata.
type takePlan struct {
	field map[protowire.Number]int // protobuf field number -> struct field index
	// deepCopy is the index of the DeepCopyInto method of a pointer to
	// each field's type (for a pointer field, of the type it points to).
	deepCopy map[protowire.Number]int
}

// takePlanOf returns the plan of obj's type, built at its first use; nil when
// the type has no such field (a PartialObjectMetadata).
func takePlanOf(obj runtime.Object) *takePlan {
	t := reflect.TypeOf(obj)
	if p, ok := takePlans.Load(t); ok {
		return p.(*takePlan)
	}
	var p *takePlan
	if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		st := t.Elem()
		for i := range st.NumField() {
			f := st.Field(i)
			num, ok := protobufField(f.Tag.Get("protobuf"))
			if !ok || num == objMetadataField || num >= 64 || !f.IsExported() {
				continue
			}
			target := f.Type // the struct, or the struct a pointer field points to
			if target.Kind() == reflect.Pointer {
				target = target.Elem()
			}
			if target.Kind() != reflect.Struct {
				continue
			}
			m, ok := reflect.PointerTo(target).MethodByName("DeepCopyInto")
			if !ok || m.Type.NumIn() != 2 || m.Type.In(1) != reflect.PointerTo(target) {
				continue // every generated API type has it
			}
			if p == nil {
				p = &takePlan{field: map[protowire.Number]int{}, deepCopy: map[protowire.Number]int{}}
			}
			p.field[num], p.deepCopy[num] = i, m.Index
		}
	}
	takePlans.Store(t, p)
	return p
}

// protobufField reads the field number of a single message field from a
// generated struct tag, "bytes,2,opt,name=spec".
func protobufField(tag string) (protowire.Number, bool) {
	parts := strings.Split(tag, ",")
	if len(parts) < 3 || parts[0] != "bytes" || parts[2] != "opt" {
		return 0, false
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n <= 0 {
		return 0, false
	}
	return protowire.Number(n), true
}

// unchanged is what Object works out for one message under a Prior: the held
// version, its digests, the new digests and the fields to take.
type unchanged struct {
	// copy deep-copies the taken fields rather than sharing them.
	copy  bool
	plan  *takePlan
	prior runtime.Object
	held  FieldSums
	ok    bool
	sums  FieldSums
	take  []protowire.Number
	// seen has bit n set for each field n of the plan met in the message.
	seen uint64
}

// begin prepares u for the message of id.
func (u *unchanged) begin(p Prior, plan *takePlan, id Identity) {
	u.plan, u.take, u.seen = plan, u.take[:0], 0
	u.sums = FieldSums{Version: VersionOf(id.UID, id.ResourceVersion)}
	u.prior, u.held, u.ok = p.Prior(id)
}

// skip digests a top-level field and reports whether the held version's is
// to be taken instead of decoding it. A field of the plan seen twice, of any
// length (protobuf merges repeated occurrences of a message field), is an
// error: the caller decodes the message again without taking anything.
func (u *unchanged) skip(num protowire.Number, typ protowire.Type, v []byte) (bool, error) {
	if u.plan == nil {
		return false, nil
	}
	if _, ok := u.plan.field[num]; !ok {
		return false, nil
	}
	if u.seen&(1<<num) != 0 {
		return false, errDuplicateTopField
	}
	u.seen |= 1 << num
	if typ != protowire.BytesType || len(v) < minSummed {
		return false, nil
	}
	f := u.sums.add(num, v)
	if u.ok && u.held.has(f) {
		u.take = append(u.take, num)
		return true, nil
	}
	return false, nil
}

// fill copies the taken fields from the held version into obj.
func (u *unchanged) fill(obj runtime.Object) bool {
	if len(u.take) == 0 {
		return true
	}
	dst, src := reflect.ValueOf(obj), reflect.ValueOf(u.prior)
	if dst.Type() != src.Type() || src.IsNil() {
		return false
	}
	for _, num := range u.take {
		i := u.plan.field[num]
		df, sf := dst.Elem().Field(i), src.Elem().Field(i)
		switch {
		case !u.copy:
			df.Set(sf)
		case sf.Kind() == reflect.Pointer:
			if sf.IsNil() {
				df.SetZero()
				continue
			}
			cp := reflect.New(sf.Type().Elem())
			sf.Method(u.plan.deepCopy[num]).Call([]reflect.Value{cp})
			df.Set(cp)
		default:
			sf.Addr().Method(u.plan.deepCopy[num]).Call([]reflect.Value{df.Addr()})
		}
	}
	return true
}

// fields is the set of the struct fields taken, bit i for field i.
func (u *unchanged) fields() uint64 {
	var f uint64
	for _, num := range u.take {
		if i := u.plan.field[num]; i < 64 {
			f |= 1 << i
		}
	}
	return f
}
