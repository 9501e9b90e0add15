package reconcile

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/predicate"
)

// DefaultPredicate is what Watch filters with when given no predicate: spec
// changes (generation), finalizer changes, the start of a deletion, and
// every add and delete. Status-only and metadata-only updates and resyncs
// are filtered, so a controller does not reconcile on its own status writes.
// For kinds without a generation (ConfigMaps, Secrets), every update that
// changes the object passes.
func DefaultPredicate() *predicate.Counted {
	return predicate.Any(
		predicate.GenerationChanged(),
		predicate.FinalizersChanged(),
		predicate.DeletionStarted(),
		predicate.New("no-generation", predicate.Funcs{Update: func(o, n metav1.Object) bool {
			return n.GetGeneration() == 0 && o.GetResourceVersion() != n.GetResourceVersion()
		}}),
	).Named("reconcile-default")
}

// Watch makes the objects of informer the loop's keys: every add, update
// and delete that the predicates pass (all of them must) queues the object's
// namespace/name with trigger ObjectChanged, or Resync for a resync. With no
// predicates, DefaultPredicate applies; pass predicate.ResourceVersionChanged()
// to reconcile on status updates too.
//
// The informer's cache is also where the loop reads an object's generation
// when its reconcile fails permanently: events of that same generation are
// dropped until it changes. A loop watches one informer this way; call
// Watch before Run, and start the informer (the factory) yourself.
func (l *Loop) Watch(informer cache.SharedIndexInformer, preds ...predicate.Predicate) error {
	l.mu.Lock()
	switch {
	case l.state != stateNew:
		l.mu.Unlock()
		return fmt.Errorf("reconcile: loop %q: Watch after Run", l.name)
	case l.primary != nil:
		l.mu.Unlock()
		return fmt.Errorf("reconcile: loop %q: already watches its objects' informer; use WatchRelated for others", l.name)
	}
	l.primary = informer.GetStore()
	l.mu.Unlock()

	h := cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, _ bool) { l.onObject(obj, ObjectChanged, false) },
		UpdateFunc: func(oldObj, newObj any) {
			t := ObjectChanged
			if sameResourceVersion(oldObj, newObj) {
				t = Resync
			}
			l.onObject(newObj, t, false)
		},
		DeleteFunc: func(obj any) { l.onObject(obj, ObjectChanged, true) },
	}
	if err := l.addHandler(informer, combine(preds, DefaultPredicate), h); err != nil {
		l.mu.Lock()
		l.primary = nil
		l.mu.Unlock()
		return err
	}
	return nil
}

// WatchRelated queues the keys that keys returns for every event of
// informer that the predicates pass (all of them must), with trigger
// RelatedChanged: children the controller creates (see ByOwner), or objects
// its objects refer to. A related change also unparks the keys it maps to,
// since it may be what a permanent failure waited for (the ConfigMap that
// was missing). With no predicates, predicate.ResourceVersionChanged()
// applies: every real change, no resyncs.
func (l *Loop) WatchRelated(informer cache.SharedIndexInformer, keys func(obj any) []cache.ObjectName, preds ...predicate.Predicate) error {
	l.mu.Lock()
	if l.state != stateNew {
		l.mu.Unlock()
		return fmt.Errorf("reconcile: loop %q: WatchRelated after Run", l.name)
	}
	l.mu.Unlock()
	related := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			if d.Obj == nil {
				return
			}
			obj = d.Obj
		}
		for _, key := range keys(obj) {
			l.enqueue(key, RelatedChanged, l.o.debounce, true)
		}
	}
	h := cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, _ bool) { related(obj) },
		UpdateFunc: func(_, newObj any) { related(newObj) },
		DeleteFunc: related,
	}
	return l.addHandler(informer, combine(preds, func() *predicate.Counted { return predicate.ResourceVersionChanged() }), h)
}

func (l *Loop) addHandler(informer cache.SharedIndexInformer, p predicate.Predicate, h cache.ResourceEventHandler) error {
	reg, err := informer.AddEventHandler(predicate.Handler(p, h))
	if err != nil {
		return fmt.Errorf("reconcile: loop %q: add event handler: %w", l.name, err)
	}
	l.mu.Lock()
	l.watches = append(l.watches, watched{informer: informer, reg: reg})
	l.mu.Unlock()
	return nil
}

func combine(preds []predicate.Predicate, def func() *predicate.Counted) predicate.Predicate {
	switch len(preds) {
	case 0:
		return def()
	case 1:
		return preds[0]
	}
	return predicate.All(preds...)
}

// onObject queues the key of an event of the watched informer, unless the
// key is parked and the event shows the version it failed on.
func (l *Loop) onObject(obj any, t Trigger, deleted bool) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		l.log.Error("reconcile: event for an object without a name", "error", err)
		return
	}
	l.mu.Lock()
	if v, parked := l.parked[key]; parked {
		m, err := meta.Accessor(obj)
		if !deleted && err == nil && v.same(m) {
			l.mu.Unlock()
			l.metrics.dropped.WithLabelValues("parked").Inc()
			l.log.Debug("reconcile: event dropped, key parked on this generation",
				"object", key.String(), "trigger", t.String(), "generation", v.generation)
			return
		}
		delete(l.parked, key)
	}
	q := l.recordLocked(key, t, l.o.debounce)
	l.mu.Unlock()
	if q != nil {
		schedule(q, key, l.o.debounce)
	}
}

func sameResourceVersion(oldObj, newObj any) bool {
	o, err1 := meta.Accessor(oldObj)
	n, err2 := meta.Accessor(newObj)
	return err1 == nil && err2 == nil && o.GetResourceVersion() == n.GetResourceVersion()
}

// ByOwner maps an object to the keys of its owners of group and kind gk,
// in the object's namespace: the mapping for WatchRelated on the children a
// controller creates with owner references.
//
//	loop.WatchRelated(configMaps, reconcile.ByOwner(schema.GroupKind{Group: "example.com", Kind: "Widget"}))
func ByOwner(gk schema.GroupKind) func(obj any) []cache.ObjectName {
	return func(obj any) []cache.ObjectName {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil
		}
		var keys []cache.ObjectName
		for _, ref := range m.GetOwnerReferences() {
			gv, err := schema.ParseGroupVersion(ref.APIVersion)
			if err != nil || gv.Group != gk.Group || ref.Kind != gk.Kind {
				continue
			}
			keys = append(keys, cache.NewObjectName(m.GetNamespace(), ref.Name))
		}
		return keys
	}
}
