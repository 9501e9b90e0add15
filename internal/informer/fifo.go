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

// This file is client-go v0.37.2's newQueueFIFO (tools/cache/controller.go).
// The RealFIFO's logger is not exported, so the logger returned is built
// as NewRealFIFOWithOptions builds it: the caller's, named after the FIFO.

package informer

import (
	"fmt"

	clientgofeaturegate "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// newQueueFIFO constructs a new FIFO, choosing between real and delta FIFO
// depending on the InOrderInformers feature gate.
//
// It returns the FIFO and the logger used by the FIFO.
func newQueueFIFO(logger klog.Logger, objectType any, clientState cache.Store, transform cache.TransformFunc, identifier cache.InformerNameAndResource, metricsProvider cache.InformerMetricsProvider) (klog.Logger, cache.Queue) {
	if clientgofeaturegate.FeatureGates().Enabled(clientgofeaturegate.InOrderInformers) {
		name := fmt.Sprintf("RealFIFO %T", objectType)
		options := cache.RealFIFOOptions{
			Logger:          &logger,
			Name:            name,
			KeyFunction:     cache.MetaNamespaceKeyFunc,
			Transformer:     transform,
			Identifier:      identifier,
			MetricsProvider: metricsProvider,
		}
		// If atomic events are enabled, unset clientState in the case of atomic events as we cannot pass a
		// store to an atomic fifo.
		if clientgofeaturegate.FeatureGates().Enabled(clientgofeaturegate.AtomicFIFO) {
			options.AtomicEvents = true
			options.UnlockWhileProcessing = clientgofeaturegate.FeatureGates().Enabled(clientgofeaturegate.UnlockWhileProcessingFIFO)
			options.EmitDeltaTypeBookmark = true
		} else {
			options.KnownObjects = clientState
		}
		if n := identifier.Name(); n != "" {
			name = n
		}
		return klog.LoggerWithName(logger, name), cache.NewRealFIFOWithOptions(options)
	}
	name := fmt.Sprintf("DeltaFIFO %T", objectType)
	return klog.LoggerWithName(logger, name), cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{
		Logger:                &logger,
		Name:                  name,
		KnownObjects:          clientState,
		EmitDeltaTypeReplaced: true,
		Transformer:           transform,
	})
}
