/*
Copyright 2015 The Kubernetes Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// This file is client-go v0.37.2's processDeltas, processDeltasInBatch,
// processReplacedAllInfo (tools/cache/controller.go) and the part of
// reconcileReplacement they use (tools/cache/the_real_fifo.go), with one
// addition: a store that keeps objects encoded (an upserter) is updated
// through Upsert, which reports the object it replaced without decoding it
// unless a handler is to receive it, and a re-list is applied to it in place
// (processReplacedAllInPlace) rather than by Replace.

package informer

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// upserter is a store for which reading an object costs a decode
// (encstore.Store). Upsert adds or replaces obj and reports what it replaced:
// existed is false when the key held nothing; otherwise oldRV is the replaced
// object's resourceVersion and old returns it, decoded for the caller.
type upserter interface {
	Upsert(obj any) (existed bool, oldRV string, old func() (any, error), err error)
}

// packedStore is a store whose objects may leave the informer's queue packed
// (encstore.Packed): a list's objects, packed as they were decoded so that
// the queue holds them at the size the store keeps them, not decoded. The
// informer unpacks each when it applies it, and the store keeps the packed
// bytes (UpsertPacked) unless a transform changed the object.
type packedStore interface {
	IsPacked(obj any) bool
	// KeepPacked reports whether the store holds the packed object's
	// version already, as Upsert finds it when it keeps the bytes it has.
	KeepPacked(packed any) bool
	Unpack(obj any) (runtime.Object, error)
	UpsertPacked(packed, obj any) (existed bool, oldRV string, old func() (any, error), err error)
}

// unpacker is a handler that takes part in the decoding of packed objects
// (sharedIndexInformer): it resolves their stand-ins (Options.Packed), lets
// its handlers catch up before each decode (beforeUnpack), paces the
// collector after it (afterUnpack, Options.Unpacked), and runs its transform
// on the objects once they are decoded (its queue passes packed objects
// through untransformed).
type unpacker interface {
	packedFor(obj any, take bool) (any, bool)
	beforeUnpack()
	afterUnpack()
	unpackTransform() cache.TransformFunc
}

// resolvePacked returns the packed object obj stands in for, taking it, or
// obj.
func resolvePacked(handler cache.ResourceEventHandler, obj any) any {
	if t, ok := handler.(unpacker); ok {
		if packed, ok := t.packedFor(obj, true); ok {
			return packed
		}
	}
	return obj
}

// syncAware is a handler that tells whether an update keeping an object's
// resourceVersion (a resync, or an unchanged object in a re-list) reaches
// anyone: sharedIndexInformer gives such an update only to handlers due for
// a resync.
type syncAware interface {
	anySyncing() bool
}

// deletedResolver is a handler that replaces the placeholder object of a
// deletion with the object the store holds (see Options.LastStored).
type deletedResolver interface {
	resolveDeleted(store cache.Store, obj any) any
}

// Multiplexes updates in the form of a list of Deltas into a Store, and informs
// a given handler of events OnUpdate, OnAdd, OnDelete
func processDeltas(
	logger klog.Logger,
	// Object which receives event notifications from the given deltas
	handler cache.ResourceEventHandler,
	clientState cache.Store,
	deltas cache.Deltas,
	isInInitialList bool,
	keyFunc cache.KeyFunc,
) error {
	// from oldest to newest
	for _, d := range deltas {
		obj := d.Object

		switch d.Type {
		case cache.ReplacedAll:
			info, ok := obj.(cache.ReplacedAllInfo)
			if !ok {
				return fmt.Errorf("ReplacedAll did not contain ReplacedAllInfo: %T", obj)
			}
			if err := processReplacedAllInfo(logger, handler, info, clientState, isInInitialList, keyFunc); err != nil {
				return err
			}
		case cache.SyncAll:
			_, ok := obj.(cache.SyncAllInfo)
			if !ok {
				return fmt.Errorf("SyncAll did not contain SyncAllInfo: %T", obj)
			}
			objs := clientState.List()
			for _, obj := range objs {
				handler.OnUpdate(obj, obj)
			}
			return nil
		case cache.Sync, cache.Replaced, cache.Added, cache.Updated:
			if u, ok := clientState.(upserter); ok {
				if err := upsert(handler, u, obj, isInInitialList); err != nil {
					return err
				}
				continue
			}
			if old, exists, err := clientState.Get(obj); err == nil && exists {
				if err := clientState.Update(obj); err != nil {
					return err
				}
				handler.OnUpdate(old, obj)
			} else {
				if err := clientState.Add(obj); err != nil {
					return err
				}
				handler.OnAdd(obj, isInInitialList)
			}
		case cache.Deleted:
			if r, ok := handler.(deletedResolver); ok {
				obj = r.resolveDeleted(clientState, obj)
			}
			var err error
			if obj, err = unpackTombstone(handler, clientState, obj); err != nil {
				return err
			}
			if err := clientState.Delete(obj); err != nil {
				return err
			}
			handler.OnDelete(obj)
		case cache.Bookmark:
			info, ok := obj.(cache.BookmarkInfo)
			if !ok {
				return fmt.Errorf("bookmark delta did not contain BookmarkInfo: %T", obj)
			}
			clientState.Bookmark(info.ResourceVersion)
		}
	}
	return nil
}

// upsert stores obj in an upserter and tells handler, as processDeltas does
// for client-go's store: OnAdd for a new key, else OnUpdate with the object
// it replaced. An update that keeps the resourceVersion and that no handler
// is due to receive (see syncAware) is not given at all, and the old object
// is not decoded for it.
func upsert(handler cache.ResourceEventHandler, u upserter, obj any, isInInitialList bool) error {
	put := u.Upsert
	obj = resolvePacked(handler, obj)
	if ps, ok := u.(packedStore); ok && ps.IsPacked(obj) {
		if s, ok := handler.(syncAware); ok && !s.anySyncing() && ps.KeepPacked(obj) {
			return nil // an unchanged object no handler is due for: nothing to decode
		}
		packed := obj
		var transformed bool
		var err error
		if obj, transformed, err = unpack(handler, ps, packed); err != nil {
			return err
		}
		if !transformed {
			put = func(obj any) (bool, string, func() (any, error), error) { return ps.UpsertPacked(packed, obj) }
		}
	}
	existed, oldRV, old, err := put(obj)
	if err != nil {
		return err
	}
	if !existed {
		handler.OnAdd(obj, isInInitialList)
		return nil
	}
	if s, ok := handler.(syncAware); ok && !s.anySyncing() && sameRV(obj, oldRV) {
		return nil
	}
	oldObj, err := old()
	if err != nil {
		return fmt.Errorf("the object an update replaced: %w", err)
	}
	handler.OnUpdate(oldObj, obj)
	return nil
}

// unpackTombstone returns obj with the object of a tombstone unpacked, when
// the queue made the tombstone of a packed object it still held (a re-list
// that no longer has an object queued by the list before it): handlers
// receive the object decoded and transformed, as every other.
func unpackTombstone(handler cache.ResourceEventHandler, clientState cache.Store, obj any) (any, error) {
	d, ok := obj.(cache.DeletedFinalStateUnknown)
	ps, packs := clientState.(packedStore)
	if !ok || !packs {
		return obj, nil
	}
	if d.Obj = resolvePacked(handler, d.Obj); !ps.IsPacked(d.Obj) {
		return d, nil
	}
	var err error
	d.Obj, _, err = unpack(handler, ps, d.Obj)
	return d, err
}

// unpack decodes a packed object and runs the handler's transform on it,
// if it has one: transformed then reports that the object is no longer what
// the packed bytes hold.
func unpack(handler cache.ResourceEventHandler, ps packedStore, packed any) (obj any, transformed bool, err error) {
	t, ok := handler.(unpacker)
	if ok {
		t.beforeUnpack()
	}
	decoded, err := ps.Unpack(packed)
	if err != nil {
		return nil, false, err
	}
	if ok {
		t.afterUnpack()
	}
	if !ok || t.unpackTransform() == nil {
		return decoded, false, nil
	}
	obj, err = t.unpackTransform()(decoded)
	return obj, true, err
}

// sameRV reports whether obj has resourceVersion rv, as sharedIndexInformer's
// OnUpdate compares them (an object without metadata never does).
func sameRV(obj any, rv string) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetResourceVersion() == rv
}

// processDeltasInBatch applies a batch of Delta objects to the given Store and
// notifies the ResourceEventHandler of add, update, or delete events.
//
// If the Store supports transactions (TransactionStore), all Deltas are applied
// atomically in a single transaction and corresponding handler callbacks are
// executed afterward. Otherwise, each Delta is processed individually.
//
// Returns an error if any Delta or transaction fails. For TransactionError,
// only successful operations trigger callbacks.
func processDeltasInBatch(
	logger klog.Logger,
	handler cache.ResourceEventHandler,
	clientState cache.Store,
	deltas []cache.Delta,
	isInInitialList bool,
	keyFunc cache.KeyFunc,
) error {
	// from oldest to newest
	txns := make([]cache.Transaction, 0)
	callbacks := make([]func(), 0)
	txnStore, txnSupported := clientState.(cache.TransactionStore)
	if !txnSupported {
		var errs []error
		for _, delta := range deltas {
			if err := processDeltas(logger, handler, clientState, cache.Deltas{delta}, isInInitialList, keyFunc); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("unexpected error when handling deltas: %v", errs)
		}
		return nil
	}
	// deltasList is a list of unique objects
	for _, d := range deltas {
		obj := d.Object
		switch d.Type {
		case cache.Sync, cache.Replaced, cache.Added, cache.Updated:
			// it will only return one old object for each because items are unique
			if old, exists, err := clientState.Get(obj); err == nil && exists {
				txn := cache.Transaction{
					Type:   cache.TransactionTypeUpdate,
					Object: obj,
				}
				txns = append(txns, txn)
				callbacks = append(callbacks, func() {
					handler.OnUpdate(old, obj)
				})
			} else {
				txn := cache.Transaction{
					Type:   cache.TransactionTypeAdd,
					Object: obj,
				}
				txns = append(txns, txn)
				callbacks = append(callbacks, func() {
					handler.OnAdd(obj, isInInitialList)
				})
			}
		case cache.Deleted:
			txn := cache.Transaction{
				Type:   cache.TransactionTypeDelete,
				Object: obj,
			}
			txns = append(txns, txn)
			callbacks = append(callbacks, func() {
				handler.OnDelete(obj)
			})
		default:
			return fmt.Errorf("delta type %s is not supported in batch processing", d.Type)
		}
	}

	err := txnStore.Transaction(txns...)
	if err != nil {
		// if txn had error, only execute the callbacks for the successful ones
		for _, i := range err.SuccessfulIndices {
			if i < len(callbacks) {
				callbacks[i]()
			}
		}
		// formatting the error so txns doesn't escape and keeps allocated in the stack.
		return fmt.Errorf("not all items in the batch successfully processed: %s", err.Error())
	}
	for _, callback := range callbacks {
		callback()
	}
	return nil
}

func processReplacedAllInfo(logger klog.Logger, handler cache.ResourceEventHandler, info cache.ReplacedAllInfo, clientState cache.Store, isInInitialList bool, keyFunc cache.KeyFunc) error {
	if u, ok := clientState.(upserter); ok {
		return processReplacedAllInPlace(logger, handler, info, clientState, u, isInInitialList, keyFunc)
	}
	var deletions []cache.DeletedFinalStateUnknown
	type replacement struct {
		oldObj any
		newObj any
	}
	replacements := make([]replacement, 0, len(info.Objects))

	err := reconcileReplacement(logger, clientState, info.Objects, keyFunc,
		func(obj cache.DeletedFinalStateUnknown) error {
			deletions = append(deletions, obj)
			return nil
		},
		func(obj any) error {
			// This behavior matches processDeltas handling of Replace deltas
			if old, exists, err := clientState.Get(obj); err == nil && exists {
				replacements = append(replacements, replacement{newObj: obj, oldObj: old})
			} else {
				replacements = append(replacements, replacement{newObj: obj})
			}
			return nil
		},
	)
	if err != nil {
		return err
	}

	// Replace the client state first so the store reflects the events handlers are given
	if err := clientState.Replace(info.Objects, info.ResourceVersion); err != nil {
		return err
	}
	// Processing all deletions first matches behavior of RealFIFO#Replace
	for _, objToDelete := range deletions {
		handler.OnDelete(objToDelete)
	}
	// Processing adds/updates in order observed by reconcileReplacement matches behavior of RealFIFO#Replace
	for _, r := range replacements {
		if r.oldObj != nil {
			handler.OnUpdate(r.oldObj, r.newObj)
		} else {
			handler.OnAdd(r.newObj, isInInitialList)
		}
	}
	return nil
}

// processReplacedAllInPlace applies a re-list to a store that keeps objects
// encoded, one object at a time, with the events client-go gives for it and
// in the same order: a DeletedFinalStateUnknown for each object the list no
// longer has, then an add or update for each listed object. client-go's
// processReplacedAllInfo holds every replaced object, decoded, until the
// store is replaced; here each is decoded only when a handler is to receive
// it, and handed to the handlers at once. The difference a handler can see:
// while the events of a re-list are delivered, the store already holds the
// objects before them in the list and not yet those after them, as it does
// in client-go when AtomicFIFO is off.
func processReplacedAllInPlace(logger klog.Logger, handler cache.ResourceEventHandler, info cache.ReplacedAllInfo, clientState cache.Store, u upserter, isInInitialList bool, keyFunc cache.KeyFunc) error {
	err := reconcileReplacement(logger, clientState, info.Objects, keyFunc,
		func(obj cache.DeletedFinalStateUnknown) error {
			if err := clientState.Delete(obj); err != nil {
				return err
			}
			handler.OnDelete(obj)
			return nil
		},
		func(obj any) error {
			return upsert(handler, u, obj, isInInitialList)
		},
	)
	if err != nil {
		return err
	}
	clientState.Bookmark(info.ResourceVersion) // the store's resourceVersion is the list's, as after Replace
	return nil
}

// reconcileReplacement is client-go's (tools/cache/the_real_fifo.go) without
// queued items, the only way processReplacedAllInfo calls it: it calls
// onDelete for the objects of knownObjects that newItems does not have, then
// onReplace for each of newItems. Keys are checked first, so that a bad
// object changes nothing.
func reconcileReplacement(
	logger klog.Logger,
	knownObjects cache.KeyListerGetter,
	newItems []any,
	keyOf func(obj any) (string, error),
	onDelete func(obj cache.DeletedFinalStateUnknown) error,
	onReplace func(obj any) error,
) error {
	// determine the keys of everything we're adding.  We cannot add the items until after the synthetic deletes have been
	// created for items that don't existing in newItems
	newKeys := sets.Set[string]{}
	for _, obj := range newItems {
		key, err := keyOf(obj)
		if err != nil {
			return cache.KeyError{Obj: obj, Err: err}
		}
		newKeys.Insert(key)
	}

	// Detect deletions for objects present in KnownObjects
	knownKeys := knownObjects.ListKeys()
	for _, knownKey := range knownKeys {
		if newKeys.Has(knownKey) { // still present
			continue
		}

		deletedObj, exists, err := knownObjects.GetByKey(knownKey)
		if err != nil {
			deletedObj = nil
			utilruntime.HandleErrorWithLogger(logger, err, "Error during lookup, placing DeleteFinalStateUnknown marker without object", "key", knownKey)
		} else if !exists {
			deletedObj = nil
			utilruntime.HandleErrorWithLogger(logger, nil, "Key does not exist in known objects store, placing DeleteFinalStateUnknown marker without object", "key", knownKey)
		}
		retErr := onDelete(cache.DeletedFinalStateUnknown{
			Key: knownKey,
			Obj: deletedObj,
		})
		if retErr != nil {
			return fmt.Errorf("couldn't enqueue object: %w", retErr)
		}
	}

	// now that we have the deletes we need for items, we can add the newItems to the items queue
	for _, obj := range newItems {
		if err := onReplace(obj); err != nil {
			return fmt.Errorf("couldn't enqueue object: %w", err)
		}
	}

	return nil
}
