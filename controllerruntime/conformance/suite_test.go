/*
Copyright 2018 The Kubernetes Authors.

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

// Package cache_test is controller-runtime's own cache test suite, copied from
// sigs.k8s.io/controller-runtime@v0.25.2/pkg/cache (cache_suite_test.go,
// cache_test.go, informer_cache_test.go), run against leancache: every
// cache.New of the original is newCache below, a controller-runtime cache
// whose informers are all leanstore informers. Changes to the copied files are
// marked "leancache:". envtest starts from the locally built kube-apiserver and
// etcd (see internal/testenv); nothing is downloaded.
//
// Tests that cannot pass by design, skipped with the reason in their body:
//   - NonBlockingGetTest ("should be able to get informer for the object
//     without blocking", in the three Describes that run it) makes informers
//     that never sync by replacing the informer constructor
//     (cache.Options.NewInformer returning a fake informer); leancache's
//     TestGetInformerDoesNotBlock checks the same with a real leanstore
//     informer that cannot sync.
//   - TestReaderWaitsForCacheSync and TestIndexFieldDoesNotBlock replace the
//     informer constructor itself (cache.Options.NewInformer returning a fake
//     informer) to test controller-runtime's reader; leancache is that
//     constructor, and rejects a NewInformer of the caller's at NewCache (see
//     leancache's TestNewCacheRejects).
package cache_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cachetune/cachetune/controllerruntime/internal/testenv"
	"github.com/cachetune/cachetune/controllerruntime/leancache"
	"github.com/cachetune/cachetune/pkg/leanstore"
)

func TestSource(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Cache Suite")
}

var testenvironment *envtest.Environment
var cfg *rest.Config
var clientset *kubernetes.Clientset

// newCache is the constructor under test in place of cache.New. It keeps
// managedFields: the suite compares cached objects with the server's own
// (Equal(knownPod2)), managedFields included, and stripping them is the one
// difference leanstore makes on purpose (tested by leancache's own tests).
// With leanstore's stripping instead (Leanstore: WithStripLastApplied(), on
// top of the default managedFields stripping), 251 specs pass and the 18
// that fail are all such Equal comparisons with the server's objects.
// Each cache reports its metrics to a registry of its own, as the suite runs
// caches of one name side by side.
func newCache(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	return leancache.New(leancache.Options{
		Leanstore:  []leanstore.Option{leanstore.WithKeepManagedFields()},
		Registerer: prometheus.NewRegistry(),
	}).NewCache(config, opts)
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	testenvironment = &envtest.Environment{}

	var err error
	// leancache: envtest on the locally built binaries.
	cfg, err = testenv.Start(context.Background(), testenvironment)
	Expect(err).NotTo(HaveOccurred())

	clientset, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	Expect(testenvironment.Stop()).To(Succeed())
})
