package encstore_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cachetune/cachetune/internal/fixture"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// namespaces is the number of namespaces the benchmarks' Pods are spread
// over, so that a reconcile's List of its namespace returns a hundredth of
// the cache.
const namespaces = 100

var fixtureNow = time.Date(2026, 11, 29, 12, 24, 22, 0, time.UTC)

// storedPod returns Pod i as an informer keeps it with leanstore's defaults:
// the dataset's Pod with managedFields and kubectl's last-applied annotation
// stripped.
func storedPod(i int, shape dataset.PodShape) *corev1.Pod {
	spec := dataset.Spec{Name: "standard", Namespace: fmt.Sprintf("ns-%03d", i%namespaces), PodShape: shape}
	p := dataset.NewPod(spec, i, fixtureNow)
	delete(p.Annotations, dataset.LastAppliedAnnotation)
	p.ManagedFields = nil
	return p
}

func storedPods(n int, shape dataset.PodShape) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = storedPod(i, shape)
	}
	return out
}

// wireManagedFields are the managedFields of a Pod of the standard dataset as
// the API server wrote them (two managers), from the benchmarks' fixture,
// which was read back from a real kube-apiserver.
func wireManagedFields(tb testing.TB) []metav1.ManagedFieldsEntry {
	tb.Helper()
	first := fixture.Pods(tb)[0]
	if len(first.ManagedFields) == 0 {
		tb.Fatal("the fixture's first Pod has no managedFields")
	}
	return first.ManagedFields
}

// wirePod returns Pod i as the API server sends it: with kubectl's
// last-applied annotation and managedFields.
func wirePod(tb testing.TB, i int) *corev1.Pod {
	spec := dataset.Spec{Name: "standard", Namespace: fmt.Sprintf("ns-%03d", i%namespaces)}
	p := dataset.NewPod(spec, i, fixtureNow)
	p.ManagedFields = wireManagedFields(tb)
	return p
}
