package predicate

import "k8s.io/client-go/tools/cache"

// Handler returns an event handler that forwards to h only the events p passes:
// adds judged by p.Create, updates by p.Update, deletes by p.Delete. h receives
// the objects exactly as the informer delivered them, tombstones included.
//
// Register the result in place of h:
//
//	informer.AddEventHandler(predicate.Handler(predicate.GenerationChanged(), h))
//
// With a change predicate (GenerationChanged, LabelsChanged, ...) every add and
// delete reaches h and only matching updates do; see the package documentation.
func Handler(p Predicate, h cache.ResourceEventHandler) cache.ResourceEventHandler {
	return &filtered{p: p, h: h}
}

type filtered struct {
	p Predicate
	h cache.ResourceEventHandler
}

func (f *filtered) OnAdd(obj any, isInInitialList bool) {
	if f.p.Create(obj) {
		f.h.OnAdd(obj, isInInitialList)
	}
}

func (f *filtered) OnUpdate(oldObj, newObj any) {
	if f.p.Update(oldObj, newObj) {
		f.h.OnUpdate(oldObj, newObj)
	}
}

func (f *filtered) OnDelete(obj any) {
	if f.p.Delete(obj) {
		f.h.OnDelete(obj)
	}
}
