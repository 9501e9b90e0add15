package leanstore

import (
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/shrink"
)

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
	s      *shrink.Pipeline
	logger logr.Logger

	mu        sync.Mutex
	lastCheck time.Time
}

// NewTransformer returns a Transformer configured by opts, as Transform.
func NewTransformer(opts ...Option) *Transformer {
	o := newOptions(0, opts)
	return &Transformer{s: shrink.NewPipeline(o.strip), logger: o.logger, lastCheck: time.Now()}
}

// Transform is a cache.TransformFunc. With the mutation guard on and no
// informer's Run to check on a schedule, it checks the shared values itself,
// at most once per guard interval, and logs what changed.
func (t *Transformer) Transform(obj any) (any, error) {
	var gr schema.GroupResource
	if len(t.s.Prunes) > 0 {
		gr = resourceOf(obj)
	}
	out, err := t.s.Apply(obj, gr)
	if t.s.Guarded() && t.checkDue() {
		_, fresh := t.s.Mutations()
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
	if !t.s.Guarded() {
		return nil
	}
	all, fresh := t.s.Mutations()
	for _, e := range fresh {
		t.logger.Error(e, "cached object changed in place", "object", e.Key, "path", e.Path)
	}
	return shrink.JoinMutations(all)
}

// resourceOf guesses the resource of obj from its kind, or returns the zero
// GroupResource when obj says nothing of its kind.
func resourceOf(obj any) schema.GroupResource {
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
