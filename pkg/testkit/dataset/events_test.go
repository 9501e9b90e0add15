package dataset_test

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// TestEventWriter writes a short step at 200 writes a second beside a
// seeded dataset and checks, with a watch of its own, that every write the
// step reports arrived with its stamp (a deletion with the stamp it maps to),
// and that Cleanup leaves the dataset as it was.
func TestEventWriter(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := srv.NewNamespace(t)
	spec := dataset.Spec{Name: "events", Namespace: ns, Pods: 20}
	if err := dataset.Seed(ctx, srv.Config, spec); err != nil {
		t.Fatal(err)
	}
	pods := srv.Clientset().CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A watch that resumes where it stopped: the server closes a watch whose
	// reader falls behind, and this one's is slow under the race detector.
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return pods.Watch(ctx, o) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	seen, gone := map[int64]bool{}, map[int64]bool{}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev := range w.ResultChan() {
			obj, ok := ev.Object.(metav1.Object)
			if !ok {
				continue // a bookmark, or an error the watcher retries
			}
			seq, _, ok := dataset.ParseEventStamp(obj.GetAnnotations()[dataset.EventAnnotation])
			if !ok {
				continue
			}
			mu.Lock()
			if ev.Type == watch.Deleted {
				gone[seq] = true
			} else {
				seen[seq] = true
			}
			mu.Unlock()
		}
	})
	defer wg.Wait()

	ew, err := dataset.NewEventWriter(srv.Config, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := ew.Setup(ctx, 30); err != nil {
		t.Fatal(err)
	}
	step, err := ew.Run(ctx, 200, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("step: %d writes (%d status, %d labels, %d created, %d deleted, %d failed) in %s, %.0f/s; first error %q",
		step.Writes(), step.Status, step.Labels, step.Created, step.Deleted, len(step.Failed), step.Elapsed, step.Achieved(), step.Error)
	if step.First != 31 || step.Last-step.First+1 != int64(step.Writes()+len(step.Failed)) {
		t.Errorf("sequence numbers %d..%d for %d writes and %d failures", step.First, step.Last, step.Writes(), len(step.Failed))
	}
	if n := step.Writes() + len(step.Failed); n < 20 || n > 201 {
		t.Errorf("%d writes planned in a 1 s step at 200/s, want 20..201", n)
	}
	if len(step.Failed) > 0 || step.Status == 0 || step.Labels == 0 || step.Created == 0 || step.Deleted == 0 || len(step.Deletions) != step.Deleted {
		t.Errorf("step %+v: want every kind written, no failure", step)
	}
	if a := step.Achieved(); a <= 0 || a > 200*1.1+1 {
		t.Errorf("achieved %.0f writes/s, asked 200", a)
	}
	deletes := map[int64]int64{}
	for _, d := range step.Deletions {
		deletes[d.Seq] = d.Of
		if d.Of < 1 || d.Of >= d.Seq || d.At < step.Started.UnixNano() {
			t.Errorf("deletion %+v: the stamp it maps to must come before it, after the step's start", d)
		}
	}
	arrived := func() (missing []int64) {
		mu.Lock()
		defer mu.Unlock()
		for s := step.First; s <= step.Last; s++ {
			if of, ok := deletes[s]; ok && !gone[of] || !ok && !seen[s] {
				missing = append(missing, s)
			}
		}
		return missing
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(arrived()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if m := arrived(); len(m) > 0 {
		t.Errorf("%d writes never arrived on the watch: %v", len(m), m)
	}

	if err := ew.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil || len(after.Items) != 20 {
		t.Fatalf("after Cleanup: %v, %d pods, want the 20 seeded", err, len(after.Items))
	}
	w.Stop()
}
