package leanstore

import "k8s.io/apimachinery/pkg/runtime"

// LastAppliedAnnotation is the annotation kubectl's client-side apply writes: a
// full copy of the applied object, often the largest thing in ObjectMeta.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// PruneFunc removes parts of an object that a controller never reads. It is called
// on a freshly decoded object that nobody else holds yet, so it may change the
// object in place. It must be idempotent: applied to its own output it must change
// nothing, because client-go may run a transform twice on one object.
type PruneFunc func(obj runtime.Object) error
