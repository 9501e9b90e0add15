package leanstore

import (
	"fmt"

	"github.com/go-logr/logr"
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
)

// LastAppliedAnnotation is the annotation kubectl's client-side apply writes: a
// full copy of the applied object, often the largest thing in ObjectMeta.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// PruneFunc removes parts of an object that a controller never reads. It is called
// on a freshly decoded object that nobody else holds yet, so it may change the
// object in place. It must be idempotent: applied to its own output it must change
// nothing, because client-go may run a transform twice on one object.
type PruneFunc func(obj runtime.Object) error

// stripper holds the stripping configuration of a factory and applies it, in a
// fixed order: managedFields, annotations, prunes for the object's resource, then
// the user's own transform, then string interning or sharing.
//
// Its table of canonical values is its own: each informer's stripper gets one
// (withTable), so that sharing never links objects of two informers.
type stripper struct {
	managedFields      bool
	annotations        map[string]bool
	annotationPrefixes []string
	prunes             map[schema.GroupResource][]PruneFunc
	typedPrunes        map[reflect.Type][]PruneFunc
	user               cache.TransformFunc
	intern             bool
	share              bool
	guard              bool // the mutation guard, with share
	table              *shareTable
}

// withTable returns a copy of s with a table of canonical values of its own, for
// one informer or one Transformer.
func (s stripper) withTable() stripper {
	s.table = nil
	if s.share || s.intern {
		s.table = newShareTable(s.share && s.guard)
	}
	return s
}

// apply strips obj in place and returns it (or what the user's transform
// returned). gr names the resource, to select prunes.
func (s *stripper) apply(obj interface{}, gr schema.GroupResource) (interface{}, error) {
	if _, tombstone := obj.(cache.DeletedFinalStateUnknown); tombstone {
		return obj, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, fmt.Errorf("strip %T: %w", obj, err)
	}
	if s.managedFields && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	if ann := m.GetAnnotations(); len(ann) > 0 && (len(s.annotations) > 0 || len(s.annotationPrefixes) > 0) {
		stripAnnotations(m, ann, s.annotations, s.annotationPrefixes)
	}
	if ro, ok := obj.(runtime.Object); ok {
		for _, p := range s.prunes[gr] {
			if err := p(ro); err != nil {
				return obj, fmt.Errorf("prune %s %s/%s: %w", gr, m.GetNamespace(), m.GetName(), err)
			}
		}
		for _, p := range s.typedPrunes[reflect.TypeOf(obj)] {
			if err := p(ro); err != nil {
				return obj, fmt.Errorf("prune %T %s/%s: %w", obj, m.GetNamespace(), m.GetName(), err)
			}
		}
	}
	if s.user != nil {
		if obj, err = s.user(obj); err != nil {
			return obj, err
		}
	}
	if s.share || s.intern {
		t := s.table
		if t == nil {
			// A stripper copied without withTable: sharing within the object
			// only, never with another informer's.
			t = newShareTable(false)
		}
		t.shareObject(obj, s.share) // interns strings as it goes
	}
	return obj, nil
}

// stripAnnotations deletes the configured keys. It copies the map only when a key
// must go, so objects without such annotations keep their map untouched.
func stripAnnotations(m metaAccessor, ann map[string]string, keys map[string]bool, prefixes []string) {
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

type metaAccessor interface {
	SetAnnotations(map[string]string)
}

// Transform returns a cache.TransformFunc that strips objects as a factory built
// with opts would (managedFields unless WithKeepManagedFields, annotations,
// prunes, WithTransform, interning or sharing), for client-go's own informers:
//
//	informers.NewSharedInformerFactoryWithOptions(cs, 0,
//		informers.WithTransform(leanstore.Transform(leanstore.WithStripLastApplied())))
//
// Prunes added WithPrune apply to objects whose resource the function can tell
// from their kind: typed objects of client-go's scheme, and unstructured or
// metadata-only objects that carry apiVersion and kind. Options that concern
// lists and watches are ignored. The function is idempotent, as client-go
// requires, and safe to run again on objects whose parts listers are reading,
// as client-go does under WatchList.
//
// With interning or sharing, the returned function has its own table of
// canonical values: give one informer (or the informers of one resource) a
// function of its own, and two functions never link their objects. Use
// NewTransformer for a handle on the mutation guard.
func Transform(opts ...Option) cache.TransformFunc {
	return NewTransformer(opts...).Transform
}

// Transformer is Transform's function with a handle on its table of shared
// values, to check them with the mutation guard (WithMutationGuard):
//
//	t := leanstore.NewTransformer(leanstore.WithSharing(true), leanstore.WithMutationGuard(true))
//	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(t.Transform))
//	...
//	if err := t.CheckMutations(); err != nil { ... } // in a test, after the controller ran
type Transformer struct {
	s      stripper
	logger logr.Logger

	mu        sync.Mutex
	lastCheck time.Time
}

// NewTransformer returns a Transformer configured by opts, as Transform.
func NewTransformer(opts ...Option) *Transformer {
	o := newOptions(0, opts)
	return &Transformer{s: o.strip.withTable(), logger: o.logger, lastCheck: time.Now()}
}

// Transform is a cache.TransformFunc. With the mutation guard on and no
// informer's Run to check on a schedule, it checks the shared values itself,
// at most once per guard interval, and logs what changed.
func (t *Transformer) Transform(obj interface{}) (interface{}, error) {
	var gr schema.GroupResource
	if len(t.s.prunes) > 0 {
		gr = resourceOf(obj)
	}
	out, err := t.s.apply(obj, gr)
	if t.s.table != nil && t.s.table.guarded && t.checkDue() {
		_, fresh := t.s.table.mutations()
		for _, e := range fresh {
			t.logger.Error(e, "cached object changed in place", "object", e.Key, "path", e.Path)
		}
	}
	return out, err
}

func (t *Transformer) checkDue() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if time.Since(t.lastCheck) < guardInterval {
		return false
	}
	t.lastCheck = time.Now()
	return true
}

// CheckMutations hashes every value the transformed objects share and returns
// a *MutationError for each that changed in place since it was shared (joined
// with errors.Join), naming the object and the field path. It returns nil when
// nothing changed, or when the guard is off (WithMutationGuard).
func (t *Transformer) CheckMutations() error {
	if t.s.table == nil || !t.s.table.guarded {
		return nil
	}
	all, fresh := t.s.table.mutations()
	for _, e := range fresh {
		t.logger.Error(e, "cached object changed in place", "object", e.Key, "path", e.Path)
	}
	return joinMutations(all)
}

// resourceOf guesses the resource of obj from its kind, or returns the zero
// GroupResource when obj says nothing of its kind.
func resourceOf(obj interface{}) schema.GroupResource {
	ro, ok := obj.(runtime.Object)
	if !ok {
		return schema.GroupResource{}
	}
	gvk := ro.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		gvks, _, err := scheme.Scheme.ObjectKinds(ro)
		if err != nil || len(gvks) == 0 {
			return schema.GroupResource{}
		}
		gvk = gvks[0]
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.GroupResource()
}
