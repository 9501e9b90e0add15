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

			// It does not spin: the costly lists stay under the backoff's bound
			// and the probes between them at one a second, both over the time
			// the proxy actually counted (at least the fault's 7 s; longer on a
			// loaded machine, where every wait only grows). The costly lists are
			// the attempts the backoff allows, plus one: after its second
			// streaming list fails, a list falls back to a paged LIST at once.
			// The identity's own discovery requests are not the informer's.
			requests := r.Requests - r.ByVerb[faults.Other]
			costly := requests - r.Probes
			if bound := resilience.MaxAttempts(backoff, r.FaultWindow) + 1; costly > bound {
				t.Errorf("%d lists of configmaps (and %d probes) in %s (%v per second), want at most %d from the backoff", costly, r.Probes, r.FaultWindow, r.PerSecond, bound)
			}
			if bound := int(r.FaultWindow / probeEvery); r.Probes > bound {
				t.Errorf("%d probes in %s (%v per second), want at most one a second, %d", r.Probes, r.FaultWindow, r.PerSecond, bound)
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
