package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/failure"
)

func key(ns, name string) cache.ObjectName { return cache.NewObjectName(ns, name) }

// The policy row by row: what each error deserves (docs/reconcile.md's table)
// and why: a transient error is retried, a permanent one parked.
func TestPolicyDecisions(t *testing.T) {
	widgets := schema.GroupResource{Group: "bench.cachetune.dev", Resource: "widgets"}
	const backoff = 3 * time.Second
	p := policy{conflictDelay: 100 * time.Millisecond, conflictRetries: 3}
	cases := []struct {
		name    string
		err     error
		attempt int
		want    Decision
	}{
		{"network", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, 1, Decision{After: backoff}},
		{"time-out", context.DeadlineExceeded, 1, Decision{After: backoff}},
		{"per-call time-out", &failure.Error{Layer: failure.LayerClient, Reason: failure.Timeout, Call: "get configmap"}, 1, Decision{After: backoff}},
		{"429 without Retry-After", apierrors.NewTooManyRequests("slow down", 0), 1, Decision{After: backoff}},
		{"429 with a longer Retry-After", apierrors.NewTooManyRequests("slow down", 10), 1, Decision{After: 10 * time.Second}},
		{"429 with a shorter Retry-After", apierrors.NewTooManyRequests("slow down", 1), 1, Decision{After: backoff}},
		{"503", apierrors.NewServiceUnavailable("down"), 1, Decision{After: backoff}},
		{"504", apierrors.NewTimeoutError("gateway", 0), 1, Decision{After: backoff}},
		{"500", apierrors.NewInternalError(errors.New("boom")), 1, Decision{After: backoff}},
		{"409 resourceVersion conflict", apierrors.NewConflict(widgets, "w", errors.New("modified")), 1, Decision{After: 100 * time.Millisecond}},
		{"409 conflict, third in a row", apierrors.NewConflict(widgets, "w", errors.New("modified")), 3, Decision{After: 100 * time.Millisecond}},
		{"409 conflict, fourth in a row", apierrors.NewConflict(widgets, "w", errors.New("modified")), 4, Decision{After: backoff}},
		{"wrapped conflict", fmt.Errorf("update status: %w", apierrors.NewConflict(widgets, "w", errors.New("modified"))), 1, Decision{After: 100 * time.Millisecond}},
		{"unknown error", errors.New("something odd"), 1, Decision{After: backoff}},
		{"400", apierrors.NewBadRequest("bad"), 1, Decision{Park: true}},
		{"403", apierrors.NewForbidden(widgets, "w", errors.New("no RBAC")), 1, Decision{Park: true}},
		{"404", apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "parts"), 1, Decision{Park: true}},
		{"422", apierrors.NewInvalid(schema.GroupKind{Kind: "Widget"}, "w", nil), 1, Decision{Park: true}},
		{"invalid spec", failure.Reconcile(failure.InvalidSpec, "ns/w", errors.New("spec.size must be positive")), 1, Decision{Park: true}},
		{"missing field", failure.Reconcile(failure.InvalidSpec, "ns/w", errors.New("missing spec field: color")), 1, Decision{Park: true}},
		{"reconcile error wrapping a 503", failure.Reconcile(failure.ReconcileFailed, "ns/w", apierrors.NewServiceUnavailable("down")), 1, Decision{After: backoff}},
		{"reconcile error wrapping a 404", failure.Reconcile(failure.ReconcileFailed, "ns/w", apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "x")), 1, Decision{Park: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := Failure{Err: c.err, Class: failure.Classify(c.err), Attempt: c.attempt}
			if got := p.decide(f, backoff); got != c.want {
				t.Errorf("decide(%v) = %+v, want %+v (class %s)", c.err, got, c.want, f.Class)
			}
		})
	}
}
