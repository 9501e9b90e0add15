/*
Copyright 2025 The Kubernetes Authors.

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

// newFakeControllerSource and threadSafeBuffer are client-go v0.37.2's
// (tools/cache/util_test.go); newTestInformer and newTestStore are package
// informer's, for the ported tests.

package informer

import (
	"bytes"
	"errors"
	"flag"
	"reflect"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/klog/v2"

	"github.com/cachetune/cachetune/internal/encstore"
)

var storeFlag = flag.String("informer.store", "encoded", `the store the ported client-go tests run over: "encoded" (encstore) or "client-go" (cache.NewIndexer)`)

// newTestInformer is what the ported tests call instead of client-go's
// NewSharedInformer: package informer's informer over the store -informer.store
// names.
func newTestInformer(lw cache.ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration) cache.SharedIndexInformer {
	s, err := newSharedIndexInformer(lw, exampleObject, Options{
		SharedIndexInformerOptions: cache.SharedIndexInformerOptions{ResyncPeriod: defaultEventHandlerResyncPeriod},
		NewStore:                   testStoreFactory(exampleObject),
	})
	if err != nil {
		panic(err) // a test's own setup: the store's options are fixed
	}
	return s
}

// testStoreFactory returns the factory of the store -informer.store names,
// for objects of example's type; nil is client-go's store.
func testStoreFactory(example runtime.Object) StoreFactory {
	if *storeFlag == "client-go" {
		return nil
	}
	t := reflect.TypeOf(example).Elem()
	return encstore.NewIndexer(encstore.Options{
		Codec: encstore.Protobuf(func() runtime.Object { return reflect.New(t).Interface().(runtime.Object) }),
	})
}

// newTestStore is the store the ported controller tests fill, for Pods.
func newTestStore(tb testing.TB, example runtime.Object) cache.Store {
	tb.Helper()
	f := testStoreFactory(example)
	if f == nil {
		return cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)
	}
	s, err := f(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func newFakeControllerSource(tb testing.TB) *fcache.FakeControllerSource {
	source := fcache.NewFakeControllerSource()
	tb.Cleanup(source.Shutdown)
	return source
}

// threadSafeBuffer is a thread-safe wrapper around bytes.Buffer.
type threadSafeBuffer struct {
	buffer bytes.Buffer
	mu     sync.Mutex
}

func (b *threadSafeBuffer) Write(p []byte) (n int, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buffer.Write(p)
}

func (b *threadSafeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buffer.String()
}

// newTestPlainInformer is client-go's NewInformer (a controller that fills a
// store and calls one handler synchronously, without sharedIndexInformer's
// processor), built as client-go's newInformer builds it but over package
// informer's processDeltas and the store -informer.store names.
func newTestPlainInformer(lw cache.ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h cache.ResourceEventHandler) (cache.Store, cache.Controller) {
	return newTestTransformingInformer(lw, objType, resyncPeriod, h, nil)
}

// newTestTransformingInformer is client-go's NewTransformingInformer, as
// newTestPlainInformer is its NewInformer.
func newTestTransformingInformer(lw cache.ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h cache.ResourceEventHandler, transformer cache.TransformFunc) (cache.Store, cache.Controller) {
	var clientState cache.Store = cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)
	if f := testStoreFactory(objType); f != nil {
		s, err := f(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})
		if err != nil {
			panic(err) // a test's own setup: the store's options are fixed
		}
		clientState = s
	}
	logger, fifo := newQueueFIFO(klog.Background(), objType, clientState, transformer, cache.InformerNameAndResource{}, nil)
	keyFunc := cache.DeletionHandlingMetaNamespaceKeyFunc
	cfg := &cache.Config{
		Queue:            fifo,
		ListerWatcher:    lw,
		ObjectType:       objType,
		FullResyncPeriod: resyncPeriod,
		Process: func(obj any, isInInitialList bool) error {
			if deltas, ok := obj.(cache.Deltas); ok {
				return processDeltas(logger, h, clientState, deltas, isInInitialList, keyFunc)
			}
			return errors.New("object given as Process argument is not Deltas")
		},
		ProcessBatch: func(deltaList []cache.Delta, isInInitialList bool) error {
			return processDeltasInBatch(logger, h, clientState, deltaList, isInInitialList, keyFunc)
		},
	}
	return clientState, cache.New(cfg)
}
