package diagnose

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	testingclock "k8s.io/utils/clock/testing"
)

func TestScan(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s, err := NewStuckDetector(WithClock(clk), WithThreshold(time.Minute), WithResource("configmaps"))
	if err != nil {
		t.Fatal(err)
	}
	deleted := func(ago time.Duration) *metav1.Time { ts := metav1.NewTime(t0.Add(-ago)); return &ts }

	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "old", UID: "u1",
		DeletionTimestamp: deleted(time.Hour), Finalizers: []string{"example.com/cleanup", "example.com/backup"}}}
	recent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "recent",
		DeletionTimestamp: deleted(30 * time.Second), Finalizers: []string{"example.com/cleanup"}}}
	live := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "live"}}
	graceful := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "pod",
		DeletionTimestamp: deleted(-30 * time.Second)}} // a Pod's grace period still running
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetNamespace("b")
	u.SetName("widget")
	u.SetDeletionTimestamp(deleted(2 * time.Minute))
	u.SetFinalizers([]string{"bench.cachetune.dev/hold"})

	got := s.Scan([]any{live, recent, u, graceful, old, nil})
	want := []Stuck{
		{Resource: "configmaps", Object: ObjectRef{"a", "old", "u1"}, DeletionTimestamp: t0.Add(-time.Hour), Age: time.Hour,
			Finalizers: []string{"example.com/cleanup", "example.com/backup"}},
		{Resource: "configmaps", Object: ObjectRef{"b", "widget", ""}, DeletionTimestamp: t0.Add(-2 * time.Minute), Age: 2 * time.Minute,
			Finalizers: []string{"bench.cachetune.dev/hold"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stuck (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, s.Last()); diff != "" {
		t.Errorf("Last (-want +got):\n%s", diff)
	}
	clk.Step(time.Minute)
	if got := s.Scan([]any{recent, graceful}); len(got) != 1 || got[0].Object.Name != "recent" {
		t.Errorf("a minute later: %+v, want only recent (the grace period has not passed by a minute)", got)
	}
}
