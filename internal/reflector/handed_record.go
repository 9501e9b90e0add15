package reflector

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cachetune/cachetune/internal/objmeta"
)

// Record is what the handed set keeps of a handed object under an encoded store
// (WithEncodedStore): its namespace, name, uid and resourceVersion, enough to
// find an unchanged object in a re-list and to tell a changed one. Keeping
// the handed object itself would keep every decoded object alive beside its
// encoded bytes, and the encoded store would save nothing.
//
// A record stands for the object in the handed set's maps, and a re-list's decoder
// returns it for an object whose uid and resourceVersion it matches (such an
// object causes no event, so the record never reaches the reflector). It is a
// runtime.Object with object metadata (objmeta.Identity), so that the handed
// set's other users read it as they read any handed object.
type Record struct {
	objmeta.Identity
}

var _ runtime.Object = (*Record)(nil)

// recordOf returns the record of obj, or obj itself when it is a record, or
// nil when obj has no metadata.
func recordOf(obj runtime.Object) *Record {
	if r, ok := obj.(*Record); ok {
		return r
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return &Record{objmeta.Identity{Namespace: m.GetNamespace(), Name: m.GetName(), UID: string(m.GetUID()), ResourceVersion: m.GetResourceVersion()}}
}

func (r *Record) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (r *Record) DeepCopyObject() runtime.Object { c := *r; return &c }
