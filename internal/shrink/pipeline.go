package shrink

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Pipeline applies a Config to objects, in a fixed order: managedFields,
// annotations, prunes for the object's resource, then the user's own
// transform, then string interning or sharing.
//
// Its table of canonical values is its own: each informer gets a Pipeline
// (NewPipeline), so that sharing never links objects of two informers.
type Pipeline struct {
	Config
	table *shareTable
}

// NewPipeline returns a Pipeline of c with a table of canonical values of its
// own, for one informer or one Transformer.
func NewPipeline(c Config) *Pipeline {
	p := &Pipeline{Config: c}
	if c.Share || c.Intern {
		p.table = newShareTable(c.Share && c.Guard)
	}
	return p
}

// Apply strips obj in place and returns it (or what the user's transform
// returned). gr names the resource, to select prunes.
func (p *Pipeline) Apply(obj any, gr schema.GroupResource) (any, error) {
	return p.ApplyAfter(obj, nil, gr)
}

// ApplyAfter is Apply for a new version of prev, the object of the same key
// the cache holds (nil if none): under sharing, obj's parts equal to prev's
// take prev's. prev is only read, and must be an object this Pipeline
// stripped (its shared parts are in the table, its own are no other
// object's): never the user's, never one a later Apply walks again.
func (p *Pipeline) ApplyAfter(obj, prev any, gr schema.GroupResource) (any, error) {
	return p.ApplyTaken(obj, prev, gr, 0)
}

// ApplyTaken is ApplyAfter for an object whose top-level fields of taken
// were taken from prev, the version the cache holds, rather than decoded
// (internal/wire's TakeUnchanged): this Pipeline finished them there, so
// interning leaves them alone, and sharing finds them equal to prev's at
// once. Only for a Pipeline without prunes or a transform, which could
// make a field depend on another.
func (p *Pipeline) ApplyTaken(obj, prev any, gr schema.GroupResource, taken Fields) (any, error) {
	if _, tombstone := obj.(cache.DeletedFinalStateUnknown); tombstone {
		return obj, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, fmt.Errorf("strip %T: %w", obj, err)
	}
	if p.ManagedFields && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	if ann := m.GetAnnotations(); len(ann) > 0 && (len(p.Annotations) > 0 || len(p.AnnotationPrefixes) > 0) {
		stripAnnotations(m, ann, p.Annotations, p.AnnotationPrefixes)
	}
	if ro, ok := obj.(runtime.Object); ok {
		for _, prune := range p.Prunes[gr] {
			if err := prune(ro); err != nil {
				return obj, fmt.Errorf("prune %s %s/%s: %w", gr, m.GetNamespace(), m.GetName(), err)
			}
		}
		for _, prune := range p.TypedPrunes[reflect.TypeOf(obj)] {
			if err := prune(ro); err != nil {
				return obj, fmt.Errorf("prune %T %s/%s: %w", obj, m.GetNamespace(), m.GetName(), err)
			}
		}
	}
	if p.Transform != nil {
		if obj, err = p.Transform(obj); err != nil {
			return obj, err
		}
	}
	if p.Share || p.Intern {
		t := p.table
		if t == nil {
			// A Pipeline built without NewPipeline: sharing within the
			// object only, never with another informer's.
			t = newShareTable(false)
		}
		switch {
		case p.Share && prev != nil:
			walkObject(t, obj, prev, true) // interns strings as it goes
		case !p.Share:
			interner{t}.internObjectSkipping(obj, taken)
		default:
			shareObject(t, obj, true)
		}
	}
	return obj, nil
}

// Guarded reports whether the mutation guard watches p's shared values.
func (p *Pipeline) Guarded() bool { return p.table != nil && p.table.guarded }

// Mutations hashes every value p's objects share again and returns those that
// changed in place since they were shared, deepest path first; fresh are those
// no earlier call returned. Both are nil when p is not Guarded.
func (p *Pipeline) Mutations() (all, fresh []*MutationError) {
	if !p.Guarded() {
		return nil, nil
	}
	return mutations(p.table)
}

// shareObject interns obj's strings and, with containers, shares its slices,
// maps and pointers, in place. obj is a pointer to a typed object, an
// *unstructured.Unstructured or a *metav1.PartialObjectMetadata.
func shareObject(t *shareTable, obj any, containers bool) {
	if !containers {
		interner{t}.internObject(obj) // interning alone: along the type's plan (intern.go)
		return
	}
	walkObject(t, obj, nil, containers)
}

// stripAnnotations deletes the configured keys. It copies the map only when a key
// must go, so objects without such annotations keep their map untouched.
func stripAnnotations(m annotationSetter, ann map[string]string, keys map[string]bool, prefixes []string) {
	drop := func(k string) bool {
		if keys[k] {
			return true
		}
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
		return false
	}
	n := 0
	for k := range ann {
		if drop(k) {
			n++
		}
	}
	if n == 0 {
		return
	}
	if n == len(ann) {
		m.SetAnnotations(nil)
		return
	}
	kept := make(map[string]string, len(ann)-n)
	for k, v := range ann {
		if !drop(k) {
			kept[k] = v
		}
	}
	m.SetAnnotations(kept)
}

// annotationSetter is what stripAnnotations needs of an object's metadata.
type annotationSetter interface {
	SetAnnotations(map[string]string)
}
