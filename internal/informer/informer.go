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

// This file is client-go v0.37.2's sharedIndexInformer (tools/cache/
// shared_informer.go), with its store built by a NewStore function instead of
// cache.NewIndexer (new.go), and its controller built from client-go's exported pieces
// (cache.New, cache.Config, cache.NewRealFIFOWithOptions). Field and method
// names are upstream's, so that client-go's own informer tests run against it
// (upstream_shared_informer_test.go).

package informer

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgofeaturegate "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// sharedIndexInformer implements cache.SharedIndexInformer, as client-go's
// does: an indexed store, a controller that pulls notifications from the
// ListerWatcher into a FIFO and pops them into the store, and a
// sharedProcessor that relays them to every handler.
type sharedIndexInformer struct {
	indexer    cache.Indexer
	controller cache.Controller

	// lastStored is Options.LastStored (see resolveDeleted).
	lastStored func(any) bool
	// packed is Options.Packed (see packedFor), unpacked Options.Unpacked.
	packed   func(obj any, take bool) (any, bool)
	unpacked func()

	// synced gets created when creating the sharedIndexInformer.
	// It gets closed when Run detects that the processor created
	synced chan struct{}

	processor             *sharedProcessor
	cacheMutationDetector cache.MutationDetector

	listerWatcher cache.ListerWatcher

	// objectType is an example object of the type this informer is expected to handle.
	objectType runtime.Object

	// objectDescription is the description of this informer's objects.
	objectDescription string

	// resyncCheckPeriod is how often we want the reflector's resync timer to fire so it can call
	// shouldResync to check if any of our listeners need a resync.
	resyncCheckPeriod time.Duration
	// defaultEventHandlerResyncPeriod is the default resync period for any handlers added via
	// AddEventHandler.
	defaultEventHandlerResyncPeriod time.Duration
	// clock allows for testability. Unlike client-go's, it does not reach
	// the reflector, whose controller (cache.New) always runs on the real clock.
	clock clock.Clock

	started, stopped bool
	startedLock      sync.Mutex

	// blockDeltas gives a way to stop all event distribution so that a late event handler
	// can safely join the shared informer.
	blockDeltas sync.Mutex

	// Called whenever the ListAndWatch drops the connection with an error.
	watchErrorHandler cache.WatchErrorHandlerWithContext

	transform cache.TransformFunc

	// identifier is used to identify this informer for metrics and logging purposes.
	identifier cache.InformerNameAndResource

	// informerMetricsProvider is the metrics provider for the FIFO queue.
	informerMetricsProvider cache.InformerMetricsProvider

	// keyFunc is called when processing deltas by the underlying process function.
	keyFunc cache.KeyFunc
}

var _ cache.SharedIndexInformer = (*sharedIndexInformer)(nil)

// dummyController hides the fact that a SharedInformer is different from a dedicated one
// where a caller can `Run`.
type dummyController struct {
	informer *sharedIndexInformer
}

func (v *dummyController) RunWithContext(context.Context) {}

func (v *dummyController) Run(stopCh <-chan struct{}) {}

func (v *dummyController) HasSynced() bool {
	return v.informer.HasSynced()
}

func (v *dummyController) HasSyncedChecker() cache.DoneChecker {
	return v.informer.HasSyncedChecker()
}

func (v *dummyController) LastSyncResourceVersion() string {
	if clientgofeaturegate.FeatureGates().Enabled(clientgofeaturegate.InformerResourceVersion) {
		return v.informer.LastSyncResourceVersion()
	}
	return ""
}

func (s *sharedIndexInformer) SetWatchErrorHandler(handler cache.WatchErrorHandler) error {
	return s.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) {
		handler(r, err)
	})
}

func (s *sharedIndexInformer) SetWatchErrorHandlerWithContext(handler cache.WatchErrorHandlerWithContext) error {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()

	if s.started {
		return fmt.Errorf("informer has already started")
	}

	s.watchErrorHandler = handler
	return nil
}

func (s *sharedIndexInformer) SetTransform(handler cache.TransformFunc) error {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()

	if s.started {
		return fmt.Errorf("informer has already started")
	}

	s.transform = handler
	return nil
}

// queueTransform is the transform the queue runs: the informer's, but for
// objects its store packed, which the informer transforms once it has
// unpacked them (unpackTransform).
func (s *sharedIndexInformer) queueTransform() cache.TransformFunc {
	ps, packs := s.indexer.(packedStore)
	if s.transform == nil || !packs {
		return s.transform
	}
	return func(obj any) (any, error) {
		if ps.IsPacked(obj) {
			return obj, nil
		}
		if _, standsIn := s.packedFor(obj, false); standsIn {
			return obj, nil
		}
		return s.transform(obj)
	}
}

// packedFor returns the packed object obj stands in for (Options.Packed);
// take forgets it.
func (s *sharedIndexInformer) packedFor(obj any, take bool) (any, bool) {
	if s.packed == nil {
		return nil, false
	}
	return s.packed(obj, take)
}

// beforeUnpack is called before each packed object the informer decodes for
// its handlers. While a handler has more than handlerBacklog notifications
// waiting, it yields to the handlers' goroutines, at most catchUpYields
// times: every notification waiting holds its object decoded, and an informer
// that decodes faster than its handlers take the objects in (a start-up, on
// a small GOMAXPROCS) would hold many decoded after all, which the encoded
// store packs its lists to avoid. It never waits for a handler that does
// not run: such a handler costs the yields, and its notifications wait as
// they do in client-go.
func (s *sharedIndexInformer) beforeUnpack() {
	for range catchUpYields {
		if s.processor.backlog() <= handlerBacklog {
			return
		}
		catchUpYield()
	}
}

// catchUpYield is beforeUnpack's yield (a variable only so that a test can
// count the yields).
var catchUpYield = goruntime.Gosched

const (
	// handlerBacklog is the most notifications a handler may have waiting
	// before the informer yields to it (beforeUnpack): a few dozen decoded
	// objects, a megabyte of typed Pods.
	handlerBacklog = 32
	// catchUpYields caps beforeUnpack's yields per object.
	catchUpYields = 16
)

// afterUnpack is called after each packed object the informer decoded.
func (s *sharedIndexInformer) afterUnpack() {
	if s.unpacked != nil {
		s.unpacked()
	}
}

// unpackTransform is the transform of objects unpacked from the queue. It
// runs under blockDeltas, after the informer started: s.transform no longer
// changes.
func (s *sharedIndexInformer) unpackTransform() cache.TransformFunc { return s.transform }

func (s *sharedIndexInformer) Run(stopCh <-chan struct{}) {
	s.RunWithContext(wait.ContextForChannel(stopCh))
}

func (s *sharedIndexInformer) RunWithContext(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)

	if s.HasStarted() {
		logger.Info("Warning: the sharedIndexInformer has started, run more than once is not allowed")
		return
	}

	func() {
		s.startedLock.Lock()
		defer s.startedLock.Unlock()

		logger, fifo := newQueueFIFO(logger, s.objectType, s.indexer, s.queueTransform(), s.identifier, s.informerMetricsProvider)

		cfg := &cache.Config{
			Queue:             fifo,
			ListerWatcher:     s.listerWatcher,
			ObjectType:        s.objectType,
			ObjectDescription: s.objectDescription,
			FullResyncPeriod:  s.resyncCheckPeriod,
			ShouldResync:      s.processor.shouldResync,

			Process: func(obj any, isInInitialList bool) error {
				return s.handleDeltas(logger, obj, isInInitialList)
			},
			ProcessBatch: func(deltas []cache.Delta, isInInitialList bool) error {
				return s.handleBatchDeltas(logger, deltas, isInInitialList)
			},
			WatchErrorHandlerWithContext: s.watchErrorHandler,
		}

		s.controller = cache.New(cfg)
		s.started = true
	}()

	// Separate stop context because Processor should be stopped strictly after controller.
	// Cancelation in the parent context is ignored and all values are passed on,
	// including - but not limited to - a logger.
	processorStopCtx, stopProcessor := context.WithCancelCause(context.WithoutCancel(ctx))
	var wg wait.Group
	defer wg.Wait()                                         // Wait for Processor to stop
	defer stopProcessor(errors.New("informer is stopping")) // Tell Processor to stop
	wg.StartWithChannel(processorStopCtx.Done(), s.cacheMutationDetector.Run)
	wg.StartWithContext(processorStopCtx, s.processor.run)
	wg.Start(func() {
		select {
		case <-ctx.Done():
			// We were stopped without completing the sync.
		case <-s.controller.HasSyncedChecker().Done():
			// Controller has synced and thus so have we.
			close(s.synced)
		}
	})

	defer func() {
		s.startedLock.Lock()
		defer s.startedLock.Unlock()
		s.stopped = true // Don't want any new listeners
	}()
	s.controller.RunWithContext(ctx)
}

func (s *sharedIndexInformer) HasStarted() bool {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()
	return s.started
}

func (s *sharedIndexInformer) HasSynced() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

func (s *sharedIndexInformer) HasSyncedChecker() cache.DoneChecker {
	return &sharedIndexInformerDone{
		s: s,
	}
}

// sharedIndexInformerDone implements cache.DoneChecker for a sharedIndexInformer.
type sharedIndexInformerDone struct {
	s *sharedIndexInformer
}

func (sd *sharedIndexInformerDone) Name() string {
	return fmt.Sprintf("SharedIndexInformer %T", sd.s.objectType)
}

func (sd *sharedIndexInformerDone) Done() <-chan struct{} {
	return sd.s.synced
}

func (s *sharedIndexInformer) LastSyncResourceVersion() string {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()

	if s.controller == nil {
		return ""
	}
	return s.controller.LastSyncResourceVersion()
}

func (s *sharedIndexInformer) GetStore() cache.Store {
	return s.indexer
}

func (s *sharedIndexInformer) GetIndexer() cache.Indexer {
	return s.indexer
}

func (s *sharedIndexInformer) AddIndexers(indexers cache.Indexers) error {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()

	if s.stopped {
		return fmt.Errorf("indexer was not added because it has stopped already")
	}

	return s.indexer.AddIndexers(indexers)
}

func (s *sharedIndexInformer) GetController() cache.Controller {
	return &dummyController{informer: s}
}

func (s *sharedIndexInformer) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, cache.HandlerOptions{})
}

func (s *sharedIndexInformer) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, resyncPeriod time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, cache.HandlerOptions{ResyncPeriod: &resyncPeriod})
}

func (s *sharedIndexInformer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()

	if s.stopped {
		return nil, fmt.Errorf("handler %v was not added to shared informer because it has stopped already", handler)
	}

	logger := ptr.Deref(options.Logger, klog.Background())
	resyncPeriod := ptr.Deref(options.ResyncPeriod, s.defaultEventHandlerResyncPeriod)
	if resyncPeriod > 0 {
		if resyncPeriod < minimumResyncPeriod {
			logger.Info("Warning: resync period is too small. Changing it to the minimum allowed value", "resyncPeriod", resyncPeriod, "minimumResyncPeriod", minimumResyncPeriod)
			resyncPeriod = minimumResyncPeriod
		}

		if resyncPeriod < s.resyncCheckPeriod {
			if s.started {
				logger.Info("Warning: resync period is smaller than resync check period and the informer has already started. Changing it to the resync check period", "resyncPeriod", resyncPeriod, "resyncCheckPeriod", s.resyncCheckPeriod)

				resyncPeriod = s.resyncCheckPeriod
			} else {
				// if the event handler's resyncPeriod is smaller than the current resyncCheckPeriod, update
				// resyncCheckPeriod to match resyncPeriod and adjust the resync periods of all the listeners
				// accordingly
				s.resyncCheckPeriod = resyncPeriod
				s.processor.resyncCheckPeriodChanged(logger, resyncPeriod)
			}
		}
	}

	listener := newProcessListener(logger, handler, resyncPeriod, determineResyncPeriod(logger, resyncPeriod, s.resyncCheckPeriod), s.clock.Now(), initialBufferSize, s.HasSyncedChecker())

	if !s.started {
		handle, _ := s.processor.addListener(listener)
		return handle, nil
	}

	// in order to safely join, we have to
	// 1. stop sending add/update/delete notifications
	// 2. do a list against the store
	// 3. send synthetic "Add" events to the new handler
	// 4. unblock
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()

	handle, started := s.processor.addListener(listener)
	for _, item := range s.indexer.List() {
		// Note that we enqueue these notifications with the lock held
		// and before returning the handle. That means there is never a
		// chance for anyone to call the handle's HasSynced method in a
		// state when it would falsely return true.
		listener.add(addNotification{newObj: item, isInInitialList: true})
	}

	// Initial list is added, now we can allow the listener to detect that "upstream has synced".
	if started {
		s.processor.wg.Start(listener.watchSynced)
	}

	return handle, nil
}

func (s *sharedIndexInformer) handleDeltas(logger klog.Logger, obj any, isInInitialList bool) error {
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()

	if deltas, ok := obj.(cache.Deltas); ok {
		return processDeltas(logger, s, s.indexer, deltas, isInInitialList, s.keyFunc)
	}
	return errors.New("object given as Process argument is not Deltas")
}

func (s *sharedIndexInformer) handleBatchDeltas(logger klog.Logger, deltas []cache.Delta, isInInitialList bool) error {
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	return processDeltasInBatch(logger, s, s.indexer, deltas, isInInitialList, s.keyFunc)
}

// OnAdd conforms to ResourceEventHandler.
func (s *sharedIndexInformer) OnAdd(obj any, isInInitialList bool) {
	// Invocation of this function is locked under s.blockDeltas, so it is
	// safe to distribute the notification
	s.cacheMutationDetector.AddObject(obj)
	s.processor.distribute(addNotification{newObj: obj, isInInitialList: isInInitialList}, false)
}

// OnUpdate conforms to ResourceEventHandler.
func (s *sharedIndexInformer) OnUpdate(old, new any) {
	isSync := false

	// If is a Sync event, isSync should be true
	// If is a Replaced event, isSync is true if resource version is unchanged.
	// If RV is unchanged: this is a Sync/Replaced event, so isSync is true

	if accessor, err := meta.Accessor(new); err == nil {
		if oldAccessor, err := meta.Accessor(old); err == nil {
			// Events that didn't change resourceVersion are treated as resync events
			// and only propagated to listeners that requested resync
			isSync = accessor.GetResourceVersion() == oldAccessor.GetResourceVersion()
		}
	}

	// Invocation of this function is locked under s.blockDeltas, so it is
	// safe to distribute the notification
	s.cacheMutationDetector.AddObject(new)
	s.processor.distribute(updateNotification{oldObj: old, newObj: new}, isSync)
}

// OnDelete conforms to ResourceEventHandler.
func (s *sharedIndexInformer) OnDelete(old any) {
	// Invocation of this function is locked under s.blockDeltas, so it is
	// safe to distribute the notification
	s.processor.distribute(deleteNotification{oldObj: old}, false)
}

// anySyncing reports whether an update that keeps an object's
// resourceVersion reaches any handler (see processDeltas): one that does not
// is never given to a handler, so its old object need not be decoded.
func (s *sharedIndexInformer) anySyncing() bool {
	return s.processor.anySyncing()
}

// IsStopped reports whether the informer has already been stopped
func (s *sharedIndexInformer) IsStopped() bool {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()
	return s.stopped
}

func (s *sharedIndexInformer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()

	// in order to safely remove, we have to
	// 1. stop sending add/update/delete notifications
	// 2. remove and stop listener
	// 3. unblock
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	return s.processor.removeListener(handle)
}

// resolveDeleted returns the object handlers receive for a deletion of obj:
// obj itself, unless Options.LastStored says it is a placeholder and the
// store holds its key; then a copy of the stored object, owned here, with
// obj's resourceVersion (a store that decodes every read may still hand out a
// shared object: the encoded store's SharedReads). It runs before
// the store deletes the key, in the order of the informer's queue, so the
// store holds the last object handed to the handlers: a lookup when the
// deletion was sent could find an older one, or none, while earlier events
// still waited in the queue.
func (s *sharedIndexInformer) resolveDeleted(store cache.Store, obj any) any {
	if s.lastStored == nil || !s.lastStored(obj) {
		return obj
	}
	old, ok, err := store.Get(obj)
	if err != nil || !ok {
		return obj
	}
	o, isObj := old.(runtime.Object)
	if !isObj {
		return obj
	}
	o = o.DeepCopyObject()
	if m, err := meta.Accessor(o); err == nil {
		if d, err := meta.Accessor(obj); err == nil {
			m.SetResourceVersion(d.GetResourceVersion())
		}
	}
	return o
}
