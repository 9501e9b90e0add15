package predicate

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cachetune/cachetune/internal/objmeta"
)

// objectOf returns the metadata of anything an informer delivers: a typed object,
// an *unstructured.Unstructured, a *metav1.PartialObjectMetadata, or a delete
// tombstone (cache.DeletedFinalStateUnknown) wrapping one of them. It reports
// false when there is no object to read: a tombstone without its object, a nil
// pointer, or a value that has no ObjectMeta.
func objectOf(obj any) (metav1.Object, bool) { return objmeta.Of(obj) }
