package leanstore

import (
	"context"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/internal/shrink"
	"github.com/cachetune/cachetune/internal/status"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// guardedPods shares n pods of the dataset (8 apps) through a guarded
// pipeline, as an informer's list would.
var podsGR = schema.GroupResource{Resource: "pods"}

func guardedPods(t *testing.T, n int) (*shrink.Pipeline, []*corev1.Pod) {
	t.Helper()
	strip := shrink.NewPipeline(shrink.Config{Share: true, Guard: true})
	spec := dataset.Spec{Name: "guard", Namespace: "ns"}
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = dataset.NewPod(spec, i, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
		pods[i].ManagedFields = nil
		if _, err := strip.Apply(pods[i], podsGR); err != nil {
			t.Fatal(err)
		}
	}
	return strip, pods
}

// TestGuardRunsWithTheInformer checks the periodic check: it reports through
// the informer's status, and its goroutine ends with the informer.
func TestGuardRunsWithTheInformer(t *testing.T) {
	leakcheck.Check(t)
	defer func(d time.Duration) { guardInterval = d }(guardInterval)
	guardInterval = 10 * time.Millisecond
	strip, pods := guardedPods(t, 40)
	inf := &Informer{name: "test/pods", strip: strip, reporter: status.NewReporter("test/pods", "pods", "protobuf", logr.Discard(), nil)}
	if firstHolder(33, func(i int) unsafe.Pointer { return reflect.ValueOf(pods[i].Labels).UnsafePointer() }) == 33 {
		t.Fatal("the labels of one app's pods are not shared")
	}
	pods[33].Labels["x"] = "y" // before the check's goroutine starts
	ctx, cancel := context.WithCancel(context.Background())
	wait := inf.runGuard(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for inf.reporter.Status().Mutations == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	wait()
	if got := inf.reporter.Status().Mutations; got != 1 {
		t.Errorf("status counts %d mutations, want 1", got)
	}
	runtime.KeepAlive(pods) // cached until checked
}

// firstHolder returns the lowest index j (of the same app as i: j = i mod 8)
// whose value, by at(j), is the same allocation as i's: the object it was
// shared from.
func firstHolder(i int, at func(int) unsafe.Pointer) int {
	for j := i % 8; j < i; j += 8 {
		if at(j) == at(i) {
			return j
		}
	}
	return i
}
