package objmeta

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Identity is the part of an object's metadata that names one version of it:
// its namespace, name, uid and resourceVersion. It is the metadata of the
// stand-ins an informer's machinery keeps for objects it does not hold
// decoded (a reflector's record of a handed object, an encoded store's packed
// object), which embed it.
//
// *Identity is a metav1.Object, so that meta.Accessor returns it as it is.
// A stand-in that returned a new metav1.ObjectMeta from GetObjectMeta
// instead allocated a quarter of a kilobyte at every read of its metadata:
// each key computed by client-go's queue, each comparison of a sort by
// resourceVersion; a re-list of a few thousand changed objects made
// megabytes of garbage at once.
//
// Its other fields read as empty, and its setters change nothing: a stand-in's
// metadata is the one of the version it stands for, as it was when meta.Accessor
// returned a copy.
type Identity struct {
	Namespace, Name, UID, ResourceVersion string
}

var _ metav1.Object = (*Identity)(nil)

func (m *Identity) GetNamespace() string       { return m.Namespace }
func (m *Identity) GetName() string            { return m.Name }
func (m *Identity) GetUID() types.UID          { return types.UID(m.UID) }
func (m *Identity) GetResourceVersion() string { return m.ResourceVersion }

func (*Identity) GetGenerateName() string                       { return "" }
func (*Identity) GetGeneration() int64                          { return 0 }
func (*Identity) GetSelfLink() string                           { return "" }
func (*Identity) GetCreationTimestamp() metav1.Time             { return metav1.Time{} }
func (*Identity) GetDeletionTimestamp() *metav1.Time            { return nil }
func (*Identity) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (*Identity) GetLabels() map[string]string                  { return nil }
func (*Identity) GetAnnotations() map[string]string             { return nil }
func (*Identity) GetFinalizers() []string                       { return nil }
func (*Identity) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (*Identity) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (*Identity) SetNamespace(string)                           {}
func (*Identity) SetName(string)                                {}
func (*Identity) SetGenerateName(string)                        {}
func (*Identity) SetUID(types.UID)                              {}
func (*Identity) SetResourceVersion(string)                     {}
func (*Identity) SetGeneration(int64)                           {}
func (*Identity) SetSelfLink(string)                            {}
func (*Identity) SetCreationTimestamp(metav1.Time)              {}
func (*Identity) SetDeletionTimestamp(*metav1.Time)             {}
func (*Identity) SetDeletionGracePeriodSeconds(*int64)          {}
func (*Identity) SetLabels(map[string]string)                   {}
func (*Identity) SetAnnotations(map[string]string)              {}
func (*Identity) SetFinalizers([]string)                        {}
func (*Identity) SetOwnerReferences([]metav1.OwnerReference)    {}
func (*Identity) SetManagedFields([]metav1.ManagedFieldsEntry)  {}
