package predicate

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The change predicates below judge updates only: they pass every create and
// every delete, because an object appearing or disappearing is a change of
// everything. This is the rule controller-runtime's predicates follow, so a
// controller keeps seeing adds and deletes whichever change predicate it uses.

// GenerationChanged passes updates that change metadata.generation: spec changes
// of resources with a status subresource (and the start of a graceful deletion,
// which bumps it too). It filters status-only and metadata-only updates and
// resyncs, the usual guard against a controller reacting to its own status
// writes. Resources without a generation (ConfigMaps, Secrets) always have 0:
// every update of theirs is filtered.
func GenerationChanged() *Counted {
	return New("generation", Funcs{Update: func(o, n metav1.Object) bool {
		return o.GetGeneration() != n.GetGeneration()
	}})
}

// ResourceVersionChanged passes updates that change metadata.resourceVersion:
// every real write. It filters only the periodic resync, which delivers an
// object unchanged as an update.
func ResourceVersionChanged() *Counted {
	return New("resource-version", Funcs{Update: func(o, n metav1.Object) bool {
		return o.GetResourceVersion() != n.GetResourceVersion()
	}})
}

// LabelsChanged passes updates that add, remove or change a label. A nil and an
// empty label map are the same.
func LabelsChanged() *Counted {
	return New("labels", Funcs{Update: func(o, n metav1.Object) bool {
		return !maps.Equal(o.GetLabels(), n.GetLabels())
	}})
}

// AnnotationsChanged passes updates that add, remove or change an annotation.
func AnnotationsChanged() *Counted {
	return New("annotations", Funcs{Update: func(o, n metav1.Object) bool {
		return !maps.Equal(o.GetAnnotations(), n.GetAnnotations())
	}})
}

// FinalizersChanged passes updates that add, remove or reorder finalizers.
// Combine it with GenerationChanged (Any) so that a controller sees the
// finalizer events it must act on: a controller filtering on generation alone
// never sees its finalizer added by someone else, and objects stay Terminating.
func FinalizersChanged() *Counted {
	return New("finalizers", Funcs{Update: func(o, n metav1.Object) bool {
		return !slices.Equal(o.GetFinalizers(), n.GetFinalizers())
	}})
}

// DeletionStarted passes the moment an object starts to be deleted: an update
// that sets metadata.deletionTimestamp, a create of an object that already has
// one (an informer that starts, or re-lists, while the object is Terminating),
// and every delete (an object without finalizers goes from present to gone with
// no update in between). Updates of an object that is already Terminating are
// filtered.
func DeletionStarted() *Counted {
	return New("deletion-started", Funcs{
		Create: func(m metav1.Object) bool { return m.GetDeletionTimestamp() != nil },
		Update: func(o, n metav1.Object) bool {
			return o.GetDeletionTimestamp() == nil && n.GetDeletionTimestamp() != nil
		},
	})
}
