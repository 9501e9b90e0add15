package status

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/reflector"
	"github.com/cachetune/cachetune/internal/shrink"
	"github.com/cachetune/cachetune/pkg/failure"
)

// counterValue reads one counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func newTestReporter() (*Reporter, *Counters) {
	c := NewCounters(nil)
	return NewReporter("pods", "pods", "protobuf", logr.Discard(), c), c
}

// TestReporterFailuresAndRecovery follows an informer through two failures
// and a recovery: the status counts them in a row and by cause, handlers get
// each classified error with its attempt, the counters count them, and OK
// clears the run without forgetting the history.
func TestReporterFailuresAndRecovery(t *testing.T) {
	r, c := newTestReporter()
	var got []*failure.Error
	r.AddHandler(func(_ context.Context, _ *cache.Reflector, err error) {
		var fe *failure.Error
		if !errors.As(err, &fe) {
			t.Fatalf("handler got %T %v, want a *failure.Error", err, err)
		}
		got = append(got, fe)
	})
	ctx := context.Background()
	gone := apierrors.NewResourceExpired("too old resource version")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))

	r.Fail(ctx, reflector.FailedAttempt{Reason: failure.WatchError, Err: gone})
	r.Fail(ctx, reflector.FailedAttempt{Reason: failure.InitialListFailed, Err: forbidden})

	s := r.Status()
	if s.ConsecutiveFailures != 2 || s.FailingSince.IsZero() {
		t.Errorf("after two failures: ConsecutiveFailures %d, FailingSince %v; want 2 and set", s.ConsecutiveFailures, s.FailingSince)
	}
	if !s.Degraded(2) || s.Degraded(3) || s.Degraded(0) {
		t.Errorf("Degraded(2,3,0) = %v,%v,%v; want true,false,false", s.Degraded(2), s.Degraded(3), s.Degraded(0))
	}
	if s.FailuresByCause[failure.Gone] != 1 || s.FailuresByCause[failure.Forbidden] != 1 {
		t.Errorf("FailuresByCause = %v, want Gone 1 and Forbidden 1", s.FailuresByCause)
	}
	if s.LastErrorReason != failure.InitialListFailed || s.LastErrorCause != failure.Forbidden || !strings.Contains(s.LastError, "no") {
		t.Errorf("last error: reason %s, cause %s, %q; want InitialListFailed, Forbidden and the server's message", s.LastErrorReason, s.LastErrorCause, s.LastError)
	}
	if len(got) != 2 || got[0].Attempt != 1 || got[1].Attempt != 2 || got[1].Reason != failure.InitialListFailed {
		t.Fatalf("handlers got %v, want the two failures as attempts 1 and 2", got)
	}
	if n := counterValue(t, c.failures.WithLabelValues("pods", "pods", string(failure.WatchError), string(failure.Gone))); n != 1 {
		t.Errorf("failures_total{reason=WatchError,cause=Gone} = %v, want 1", n)
	}

	// A copy: changing it does not change the reporter's.
	s.FailuresByCause[failure.Gone] = 99

	r.OK()
	s = r.Status()
	if s.ConsecutiveFailures != 0 || !s.FailingSince.IsZero() || s.Degraded(1) {
		t.Errorf("after OK: ConsecutiveFailures %d, FailingSince %v; want 0 and zero", s.ConsecutiveFailures, s.FailingSince)
	}
	if s.FailuresByCause[failure.Gone] != 1 {
		t.Errorf("after OK FailuresByCause[Gone] = %d, want the history kept (1) and the caller's copy not shared", s.FailuresByCause[failure.Gone])
	}

	r.Fail(ctx, reflector.FailedAttempt{Reason: failure.WatchStalled, Err: errors.New("no event for 60s")})
	if s = r.Status(); s.ConsecutiveFailures != 1 || s.StalledWatches != 1 || got[2].Attempt != 1 {
		t.Errorf("a failure after recovery: ConsecutiveFailures %d, StalledWatches %d, attempt %d; want 1, 1, 1", s.ConsecutiveFailures, s.StalledWatches, got[2].Attempt)
	}
}

// TestReporterListsAndCounts checks what lists, watches, forced collections
// and mutations add to the status and the counters.
func TestReporterListsAndCounts(t *testing.T) {
	r, c := newTestReporter()
	r.Listed(reflector.ListPathStreaming, "", 10, 0)
	r.Listed(reflector.ListPathPaged, "streaming refused", 12, 9)
	r.WatchStarted()
	r.WireChanged("json")
	r.HeapBound("GOGC is set in the environment")
	r.ForcedGC()
	r.Mutated(nil)
	r.Mutated([]*shrink.MutationError{{Key: "ns/a"}, {Key: "ns/b"}})

	s := r.Status()
	if s.Lists != 2 || s.LastListCount != 12 || s.ReusedObjects != 9 || s.ListPath != reflector.ListPathPaged || s.ListPathReason != "streaming refused" || s.LastListTime.IsZero() {
		t.Errorf("lists: %d, count %d, reused %d, path %s (%q); want the last of two lists", s.Lists, s.LastListCount, s.ReusedObjects, s.ListPath, s.ListPathReason)
	}
	if s.WatchesStarted != 1 || s.Wire != "json" || s.HeapBoundOff == "" || s.ForcedGCs != 1 || s.Mutations != 2 {
		t.Errorf("status %+v: want one watch, wire json, heap bound off, one forced GC, two mutations", s)
	}
	if n := counterValue(t, c.lists.WithLabelValues("pods", "pods", string(reflector.ListPathStreaming))); n != 1 {
		t.Errorf("lists_total{path=streaming} = %v, want 1", n)
	}
	if n := counterValue(t, c.mutations.WithLabelValues("pods", "pods")); n != 2 {
		t.Errorf("mutations_total = %v, want 2", n)
	}
	if n := counterValue(t, c.forcedGCs.WithLabelValues("pods", "pods")); n != 1 {
		t.Errorf("forced_gcs_total = %v, want 1", n)
	}
}

// TestReporterWithoutCounters: a nil *Counters counts nothing and does not
// panic.
func TestReporterWithoutCounters(t *testing.T) {
	r := NewReporter("pods", "pods", "protobuf", logr.Discard(), nil)
	r.Fail(context.Background(), reflector.FailedAttempt{Reason: failure.WatchFailed, Err: errors.New("reset")})
	r.Listed(reflector.ListPathPaged, "", 1, 0)
	r.ForcedGC()
	r.Mutated([]*shrink.MutationError{{Key: "ns/a"}})
	if s := r.Status(); s.ConsecutiveFailures != 1 || s.Lists != 1 || s.ForcedGCs != 1 || s.Mutations != 1 {
		t.Errorf("status %+v, want one of each", s)
	}
}
