package diagnose

import (
	"encoding/json"
	"hash/fnv"
	"maps"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Class is what an update changed.
type Class uint8

// The classes of an update, from the most to the least significant change.
const (
	// ClassSpec: the generation changed, or (for kinds without a generation, like
	// ConfigMaps) the body outside metadata and status changed.
	ClassSpec Class = iota + 1
	// ClassStatus: only the status changed.
	ClassStatus
	// ClassMetadata: only labels, annotations, finalizers, owner references or
	// the deletion timestamp changed.
	ClassMetadata
	// ClassStatusAndMetadata: both the status and metadata changed, the spec did not.
	ClassStatusAndMetadata
	// ClassResourceVersion: nothing but the resourceVersion (and managedFields)
	// changed: a write that changed nothing anyone reads.
	ClassResourceVersion
	// ClassUnknownBody: a PartialObjectMetadata update with unchanged metadata:
	// the status or body changed, or nothing did; a metadata-only informer
	// cannot tell.
	ClassUnknownBody
)

var classNames = map[Class]string{
	ClassSpec:              "spec",
	ClassStatus:            "status",
	ClassMetadata:          "metadata",
	ClassStatusAndMetadata: "status+metadata",
	ClassResourceVersion:   "resource-version",
	ClassUnknownBody:       "unknown-body",
}

func (c Class) String() string {
	if s, ok := classNames[c]; ok {
		return s
	}
	return "unknown"
}

// Classes are the classes in the order they are reported.
var Classes = []Class{ClassSpec, ClassStatus, ClassMetadata, ClassStatusAndMetadata, ClassResourceVersion, ClassUnknownBody}

// classified is one update, reduced to what the churn detector keeps.
type classified struct {
	class Class
	// fingerprint identifies the object's visible state after the update
	// (status and the metadata the classes look at), so that a loop writing new
	// content every time can be told from two writers flipping a value back and
	// forth. For ClassResourceVersion and ClassUnknownBody, where no change is
	// visible, it is the resourceVersion: every such write counts as new.
	fingerprint uint64
}

// classify compares two versions of one object. ok is false for a resync (same
// resourceVersion): that is not an update.
func classify(oldObj, newObj any, o, n metav1.Object) (c classified, ok bool) {
	if o.GetResourceVersion() == n.GetResourceVersion() {
		return c, false
	}
	metaChanged := !maps.Equal(o.GetLabels(), n.GetLabels()) ||
		!maps.Equal(o.GetAnnotations(), n.GetAnnotations()) ||
		!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) ||
		!equality.Semantic.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences()) ||
		(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil)
	specChanged := o.GetGeneration() != n.GetGeneration()

	oldBody, oldStatus, visible1 := bodyAndStatus(unwrap(oldObj))
	newBody, newStatus, visible2 := bodyAndStatus(unwrap(newObj))
	if !visible1 || !visible2 {
		switch {
		case specChanged:
			c.class = ClassSpec
		case metaChanged:
			c.class = ClassMetadata
		default:
			return classified{class: ClassUnknownBody, fingerprint: hashOf(n.GetResourceVersion())}, true
		}
		return classified{class: c.class, fingerprint: hashOf(metaState(n))}, true
	}
	specChanged = specChanged || !equality.Semantic.DeepEqual(oldBody, newBody)
	statusChanged := !equality.Semantic.DeepEqual(oldStatus, newStatus)
	switch {
	case specChanged:
		c.class = ClassSpec
	case statusChanged && metaChanged:
		c.class = ClassStatusAndMetadata
	case statusChanged:
		c.class = ClassStatus
	case metaChanged:
		c.class = ClassMetadata
	default:
		return classified{class: ClassResourceVersion, fingerprint: hashOf(n.GetResourceVersion())}, true
	}
	return classified{class: c.class, fingerprint: hashOf(metaState(n), newStatus)}, true
}

// metaState is the metadata whose changes make ClassMetadata.
func metaState(m metav1.Object) any {
	return struct {
		L map[string]string
		A map[string]string
		F []string
		O []metav1.OwnerReference
		D bool
	}{m.GetLabels(), m.GetAnnotations(), m.GetFinalizers(), m.GetOwnerReferences(), m.GetDeletionTimestamp() != nil}
}

// bodyAndStatus splits an object into its body (everything outside type,
// metadata and status) and its status. visible is false for objects whose body
// cannot be seen: PartialObjectMetadata, or types that are not structs.
func bodyAndStatus(obj any) (body map[string]any, status any, visible bool) {
	switch t := obj.(type) {
	case *metav1.PartialObjectMetadata:
		return nil, nil, false
	case *unstructured.Unstructured:
		body = map[string]any{}
		for k, v := range t.Object {
			switch k {
			case "apiVersion", "kind", "metadata":
			case "status":
				status = v
			default:
				body[k] = v
			}
		}
		return body, status, true
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, nil, false
	}
	v = v.Elem()
	body = map[string]any{}
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		switch {
		case !f.IsExported(), f.Name == "TypeMeta", f.Name == "ObjectMeta":
		case f.Name == "Status":
			status = v.Field(i).Interface()
		default:
			body[f.Name] = v.Field(i).Interface()
		}
	}
	return body, status, true
}

// hashOf fingerprints values through their JSON encoding, which sorts map keys.
func hashOf(vs ...any) uint64 {
	h := fnv.New64a()
	enc := json.NewEncoder(h)
	for _, v := range vs {
		_ = enc.Encode(v) // values come from decoded API objects: they encode
	}
	return h.Sum64()
}
