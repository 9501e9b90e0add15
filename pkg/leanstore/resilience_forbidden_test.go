package leanstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/internal/resilience"
	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

// TestResilienceRestrictedIdentity runs a leanstore informer as an identity
// that RBAC grants nothing: every list is 403 from the start, and the
// informer never syncs. The failures must be reported as permanent, with the
// resource named; the informer must back off rather than spin; readiness
// must say it is degraded (not merely "not synced") once the threshold of
// consecutive failures is reached; and once the identity is granted list and
// watch, the informer must sync and converge on its own.
func TestResilienceRestrictedIdentity(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against the API server")
	}
	backoff := leanstore.DefaultBackoff()
	for _, mode := range []leanstore.StreamingMode{leanstore.StreamingAuto, leanstore.StreamingOff} {
		t.Run("streaming="+mode.String(), func(t *testing.T) {
			leakcheck.Check(t)
			o := resilience.Options{Objects: 50, FaultFor: 7 * time.Second, Restricted: srv.RestrictedConfig}
			newInformer := resilience.LeanConfigMaps(leanstore.WithStreamingLists(mode), leanstore.WithLogger(logr.Discard()))
			r, err := resilience.Run(testContext(t, 2*time.Minute), srv.Config, srv.NewNamespace(t), newInformer, resilience.NoGrant(), o)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(describeResult(r))

			if len(r.Errors) == 0 {
				t.Fatal("no error reached the handler")
			}
			for _, s := range r.Errors {
				c := failure.Classify(s.Err)
				var fe *failure.Error
				if !errors.As(s.Err, &fe) || fe.Resource != "configmaps" {
					t.Errorf("handler got %q, want a *failure.Error naming configmaps", s.Err)
				}
				if c.Cause != failure.Forbidden || c.Code != 403 || !c.Permanent || c.Transient {
					t.Errorf("handler got class %s, want cause Forbidden, 403, permanent", c)
				}
				if !strings.Contains(s.Err.Error(), `resource "configmaps"`) {
					t.Errorf("error %q does not name the resource the identity lacks", s.Err)
				}
			}

			// It does not spin: the configmaps requests stay under the backoff's
			// bound (the identity's own discovery requests aside).
			requests := r.Requests - r.ByVerb[faults.Other]
			if bound := 2*resilience.MaxAttempts(backoff, o.FaultFor) + 1; requests > bound {
				t.Errorf("%d requests for configmaps in %s (%v per second), want at most %d", requests, o.FaultFor, r.PerSecond, bound)
			}
			if r.MaxPerSecond > aHandful {
				t.Errorf("%d requests in one second (%v), want at most %d", r.MaxPerSecond, r.PerSecond, aHandful)
			}
			if got := r.SurfacedTotal(); got < requests {
				t.Errorf("%d errors surfaced for %d forbidden requests", got, requests)
			}

			// Readiness names the informer as degraded, with the reason.
			if r.FaultStatus.ConsecutiveFailures < 3 {
				t.Fatalf("only %d failures in %s: the degraded threshold (3) was not reached", r.FaultStatus.ConsecutiveFailures, o.FaultFor)
			}
			if !strings.Contains(r.FaultReadiness, "resilience/configmaps degraded") || !strings.Contains(r.FaultReadiness, "forbidden") {
				t.Errorf("readiness after %d forbidden lists: %q, want resilience/configmaps degraded, with the 403", r.FaultStatus.ConsecutiveFailures, r.FaultReadiness)
			}
			if r.FaultStatus.LastErrorCause != failure.Forbidden {
				t.Errorf("status: last error cause %s, want Forbidden", r.FaultStatus.LastErrorCause)
			}

			// Granted, it recovers by itself.
			if !r.Converged {
				t.Errorf("did not converge after the grant: %s", r.Diff)
			}
			checkRecovered(t, r)
		})
	}
}
