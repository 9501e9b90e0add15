package shrink

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Config is what a Pipeline does to each object, in this order: drop
// managedFields and annotations, run the prunes of the object's resource and
// type, run the user's transform, then intern strings or share values.
type Config struct {
	// ManagedFields drops metadata.managedFields.
	ManagedFields bool
	// Annotations and AnnotationPrefixes are the annotation keys, and the
	// prefixes of keys, to drop.
	Annotations        map[string]bool
	AnnotationPrefixes []string
	// Prunes are run on objects of their resource, TypedPrunes on objects of
	// their Go type (a pointer type). A prune may change the object in place.
	Prunes      map[schema.GroupResource][]func(runtime.Object) error
	TypedPrunes map[reflect.Type][]func(runtime.Object) error
	// Transform is the user's own transform, run after the prunes.
	Transform cache.TransformFunc
	// Intern replaces strings by canonical copies; Share also replaces equal
	// slices, maps and pointers by canonical values.
	Intern bool
	Share  bool
	// Guard keeps what the mutation guard needs of each shared value (with
	// Share).
	Guard bool
}
