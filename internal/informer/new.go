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

// This file builds the informer: client-go v0.37.2's
// NewSharedIndexInformerWithOptions (tools/cache/shared_informer.go) with a
// store built by Options.NewStore instead of cache.NewIndexer.

package informer

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// StoreFactory builds an informer's store from the key function and indexers
// client-go's informer would give cache.NewIndexer.
type StoreFactory func(keyFunc cache.KeyFunc, indexers cache.Indexers) (cache.Indexer, error)

// Options configure an informer: client-go's SharedIndexInformerOptions, and
// the store.
type Options struct {
	cache.SharedIndexInformerOptions
	// NewStore builds the informer's store; nil builds client-go's own
	// (cache.NewIndexer).
	NewStore StoreFactory
	// LastStored, when set, reports whether the object of a deletion stands
	// for the object the store holds under its key: a source that no longer
	// has a deleted object (a re-list that keeps only keys and versions of
	// what it handed out, see package leanstore) sends a placeholder with the
	// object's metadata. The informer then gives its handlers the object the
	// store held, with the placeholder's resourceVersion, as client-go's
	// re-list gives the store's last object of a deleted key.
	LastStored func(deleted any) bool
	// Packed, when set, returns the packed object (see packedStore) that
	// obj stands in for: a source that can send only objects of the
	// informer's type (a watch) sends a placeholder with the object's
	// metadata instead, and the informer applies the pack. take forgets
	// it, when the informer applies it.
	Packed func(obj any, take bool) (packed any, ok bool)
	// Unpacked, when set, is called after each packed object the informer
	// decodes: the source that packed it paces the garbage collector by
	// them while it takes a list in (see package reflector's Pacer).
	Unpacked func()
}

// NewWithStore returns a SharedIndexInformer that behaves as client-go's
// (cache.NewSharedIndexInformerWithOptions) over the store o.NewStore builds.
func NewWithStore(lw cache.ListerWatcher, exampleObject runtime.Object, o Options) (cache.SharedIndexInformer, error) {
	s, err := newSharedIndexInformer(lw, exampleObject, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func newSharedIndexInformer(lw cache.ListerWatcher, exampleObject runtime.Object, o Options) (*sharedIndexInformer, error) {
	newStore := o.NewStore
	if newStore == nil {
		newStore = func(keyFunc cache.KeyFunc, indexers cache.Indexers) (cache.Indexer, error) {
			return cache.NewIndexer(keyFunc, indexers, cache.WithStoreMetrics(o.Identifier, o.InformerMetricsProvider)), nil
		}
	}
	indexers := o.Indexers
	if indexers == nil {
		indexers = cache.Indexers{}
	}
	indexer, err := newStore(cache.DeletionHandlingMetaNamespaceKeyFunc, indexers)
	if err != nil {
		return nil, fmt.Errorf("informer for %T: build its store: %w", exampleObject, err)
	}

	realClock := &clock.RealClock{}

	processor := &sharedProcessor{clock: realClock}
	processor.listenersRCond = sync.NewCond(processor.listenersLock.RLocker())

	return &sharedIndexInformer{
		indexer:                         indexer,
		processor:                       processor,
		synced:                          make(chan struct{}),
		listerWatcher:                   lw,
		objectType:                      exampleObject,
		objectDescription:               o.ObjectDescription,
		resyncCheckPeriod:               o.ResyncPeriod,
		defaultEventHandlerResyncPeriod: o.ResyncPeriod,
		clock:                           realClock,
		cacheMutationDetector:           cache.NewCacheMutationDetector(fmt.Sprintf("%T", exampleObject)),
		identifier:                      o.Identifier,
		informerMetricsProvider:         o.InformerMetricsProvider,
		keyFunc:                         cache.DeletionHandlingMetaNamespaceKeyFunc,
		lastStored:                      o.LastStored,
		packed:                          o.Packed,
		unpacked:                        o.Unpacked,
	}, nil
}
