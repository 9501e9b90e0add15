package leanstore

import (
	"time"

	"k8s.io/client-go/tools/cache"
)

// AddEventHandler is client-go's; while the first list is taken in, the
// handler's initial adds let the heap bound collect (pacedHandler).
func (i *Informer) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandler(i.paced(handler))
}

// AddEventHandlerWithResyncPeriod is client-go's; while the first list is
// taken in, the handler's initial adds let the heap bound collect
// (pacedHandler).
func (i *Informer) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, resyncPeriod time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(i.paced(handler), resyncPeriod)
}

// AddEventHandlerWithOptions is client-go's; while the first list is taken
// in, the handler's initial adds let the heap bound collect (pacedHandler).
func (i *Informer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithOptions(i.paced(handler), options)
}

// paced returns h wrapped in a pacedHandler when the informer's heap bound
// guards its first list's hand-over (deliveryTick is set), h otherwise.
func (i *Informer) paced(h cache.ResourceEventHandler) cache.ResourceEventHandler {
	if i.deliveryTick == nil || h == nil {
		return h
	}
	return pacedHandler{ResourceEventHandler: h, tick: i.deliveryTick}
}

// pacedHandler is the handler the caller gave, whose adds of the informer's
// initial list call tick (reflector.ListWatch.Delivered) before the caller's
// OnAdd; every call is passed on unchanged. client-go delivers a first
// list's notifications to each handler on a goroutine of its own, after the
// indexer has stored the list, and allocates for each one: the garbage of
// that delivery made the start-up peak of a cache of small objects, 1.4
// times its live heap, where the tick lets the heap bound collect from the
// goroutine that allocates (docs/memory.md, "The start-up peak of small
// caches"). Outside the first list's hand-over the tick costs two atomic
// loads.
//
// client-go names a handler after its type in its logs and in the name of
// its registration's HasSynced checker: a wrapped handler is named
// leanstore.pacedHandler there. WithHeapBound(0) leaves handlers unwrapped.
type pacedHandler struct {
	cache.ResourceEventHandler
	tick func()
}

func (h pacedHandler) OnAdd(obj any, isInInitialList bool) {
	if isInInitialList {
		h.tick()
	}
	h.ResourceEventHandler.OnAdd(obj, isInInitialList)
}
