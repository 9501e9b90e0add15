package diagnose

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cachetune/cachetune/internal/objmeta"
)

// ObjectRef names the object a finding is about.
type ObjectRef struct {
	Namespace string
	Name      string
	// UID tells a re-created object from the one before it.
	UID types.UID
}

// String is "namespace/name", or "name" for cluster-scoped objects.
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

func refOf(m metav1.Object) ObjectRef {
	return ObjectRef{Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID()}
}

// unwrap returns the object inside a delete tombstone, or obj itself.
func unwrap(obj any) any { return objmeta.Unwrap(obj) }

// objectOf returns the metadata of anything an informer delivers (typed,
// unstructured, PartialObjectMetadata, or a tombstone wrapping one), or false
// when there is no object to read.
func objectOf(obj any) (metav1.Object, bool) { return objmeta.Of(obj) }
