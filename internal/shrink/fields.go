package shrink

import (
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// What the walks know of types and their fields: the types they treat apart,
// the strings they leave alone, and each struct field's name in a field path.

var (
	objectMetaType   = reflect.TypeFor[metav1.ObjectMeta]()
	timeType         = reflect.TypeFor[time.Time]()
	quantityType     = reflect.TypeFor[resource.Quantity]()
	unstructuredType = reflect.TypeFor[unstructured.Unstructured]()
	stringMapType    = reflect.TypeFor[map[string]string]()

	// maxInternLen bounds the strings worth a table lookup: long strings (certificates,
	// last-applied annotations, config files) are rarely repeated byte for byte.
	maxInternLen = 4096
)

// uniqueFields are string fields whose values are unique to one object.
var uniqueFields = map[string]bool{"ContainerID": true}

// uniqueMetaFields are ObjectMeta fields whose values are unique to one object.
var uniqueMetaFields = map[string]bool{"Name": true, "UID": true, "ResourceVersion": true, "SelfLink": true}

// uniqueMetaKeys are the same fields in an unstructured object's metadata.
var uniqueMetaKeys = map[string]bool{"name": true, "uid": true, "resourceVersion": true, "selfLink": true}

// fieldInfo is what the walk needs of a struct field.
type fieldInfo struct {
	name   string // its JSON name in a field path ("" when inlined)
	unique bool   // a string unique to one object: hashed, never interned
}

var fieldCache sync.Map // reflect.Type -> []fieldInfo

func fieldsOf(t reflect.Type) []fieldInfo {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]fieldInfo)
	}
	meta := t == objectMetaType
	out := make([]fieldInfo, t.NumField())
	for i := range out {
		sf := t.Field(i)
		name := sf.Name
		if tag, ok := sf.Tag.Lookup("json"); ok {
			name, _, _ = strings.Cut(tag, ",")
		} else if sf.Anonymous || t == unstructuredType {
			name = ""
		}
		out[i] = fieldInfo{
			name:   name,
			unique: sf.Type.Kind() == reflect.String && ((meta && uniqueMetaFields[sf.Name]) || uniqueFields[sf.Name]),
		}
	}
	fieldCache.Store(t, out)
	return out
}

// typeCache keeps the last values computed per type for one walker, by the
// type's identity, in a small direct-mapped array: a struct's fields and a
// type's comparison plan are asked for at every value of the type, and the
// process-wide caches they come from (sync.Map, keyed by reflect.Type) cost
// an interface hash and a trie walk per call, a tenth of sharing a Pod. Not
// safe for concurrent use: a share table's is used under its lock.
type typeCache[V any] struct {
	slots [64]struct {
		id typeID
		v  V
	}
}

func (c *typeCache[V]) get(t reflect.Type, compute func(reflect.Type) V) V {
	id := idOf(t)
	s := &c.slots[(id>>4)%typeID(len(c.slots))]
	if s.id != id {
		s.id, s.v = id, compute(t)
	}
	return s.v
}
