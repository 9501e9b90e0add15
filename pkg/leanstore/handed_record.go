package leanstore

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// handedRecord is what the handed set keeps of a handed object under an encoded store
// (WithEncodedStore): its namespace, name, uid and resourceVersion, enough to
// find an unchanged object in a re-list and to tell a changed one. Keeping
// the handed object itself would keep every decoded object alive beside its
// encoded bytes, and the encoded store would save nothing.
//
// A record stands for the object in the handed set's maps, and a re-list's decoder
// returns it for an object whose uid and resourceVersion it matches (such an
// object causes no event, so the record never reaches the reflector). It is a
// runtime.Object with object metadata (GetObjectMeta), so that the handed set's
// other users read it as they read any handed object.
type handedRecord struct {
	ns, name, uid, rv string
}

var _ kruntime.Object = (*handedRecord)(nil)

// recordOf returns the record of obj, or obj itself when it is a record, or
// nil when obj has no metadata.
func recordOf(obj kruntime.Object) *handedRecord {
	if r, ok := obj.(*handedRecord); ok {
		return r
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return &handedRecord{ns: m.GetNamespace(), name: m.GetName(), uid: string(m.GetUID()), rv: m.GetResourceVersion()}
}

func (r *handedRecord) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (r *handedRecord) DeepCopyObject() kruntime.Object { c := *r; return &c }

// GetObjectMeta is the record as object metadata, for meta.Accessor.
func (r *handedRecord) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: r.ns, Name: r.name, UID: types.UID(r.uid), ResourceVersion: r.rv}
}

func (r *handedRecord) GetUID() types.UID { return types.UID(r.uid) }

func (r *handedRecord) GetResourceVersion() string { return r.rv }
