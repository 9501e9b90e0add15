package shard_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/shard"
)

// member is one running Lease membership of a test.
type member struct {
	m    *shard.Membership
	stop context.CancelFunc
}

// startMember starts the Lease membership of identity in namespace ns; with
// crash its client cannot delete Leases, so that it leaves its Lease behind
// when it stops, as a process killed with SIGKILL does.
func startMember(t *testing.T, ctx context.Context, ns, identity string, crash bool) *member {
	t.Helper()
	client := srv.Clientset()
	if crash {
		client = kubernetes.NewForConfigOrDie(refusing(srv.Config, func(r *http.Request) error {
			if r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/leases/") {
				return errors.New("this client deletes no Lease")
			}
			return nil
		}))
	}
	m, err := shard.NewLeaseMembership(client, shard.LeaseConfig{Namespace: ns, Group: "ctl", Identity: identity,
		LeaseDuration: 10 * time.Second, RenewDeadline: 7 * time.Second, RetryPeriod: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	go m.Run(runCtx)
	mb := &member{m: m, stop: stop}
	t.Cleanup(mb.halt)
	return mb
}

// halt stops the membership and waits until it has (its Lease released,
// unless it crashes).
func (mb *member) halt() {
	mb.stop()
	<-mb.m.Done()
}

// waitMembers waits until every member's ring is want.
func waitMembers(t *testing.T, ctx context.Context, want []string, ms ...*member) {
	t.Helper()
	waitFor(t, ctx, "rings of "+strings.Join(want, ", "), func() bool {
		for _, mb := range ms {
			if st := mb.m.Status(); !st.Member || !slices.Equal(st.Members, want) {
				return false
			}
		}
		return true
	})
}

// Lease memberships, without any informer: a replica that joins enters every
// ring and closes the Changed channel of the version each held; one killed
// (its Lease left behind) leaves the rings once the Lease expires, and the
// survivors delete the Lease; one stopped cleanly releases its Lease and
// leaves at once.
func TestLeaseMembershipLifecycle(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 5*time.Minute)
	ns := srv.NewNamespace(t)
	leases := srv.Clientset().CoordinationV1().Leases(ns)

	a := startMember(t, ctx, ns, "a", false)
	b := startMember(t, ctx, ns, "b", true)
	waitMembers(t, ctx, []string{"a", "b"}, a, b)
	held, err := a.m.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}

	c := startMember(t, ctx, ns, "c", false)
	waitMembers(t, ctx, []string{"a", "b", "c"}, a, b, c)
	select {
	case <-held.Changed():
	default:
		t.Fatal("c joined, and the version a held was not told")
	}
	if l, err := leases.Get(ctx, "ctl-c", metav1.GetOptions{}); err != nil || l.Labels[shard.GroupLabel] != "ctl" {
		t.Fatalf("c's Lease: %v, %v; want it labelled with the group", l, err)
	}

	killed := time.Now()
	b.halt()
	if _, err := leases.Get(ctx, "ctl-b", metav1.GetOptions{}); err != nil {
		t.Fatalf("b, killed, left no Lease behind: %v", err)
	}
	waitMembers(t, ctx, []string{"a", "c"}, a, c)
	if after := time.Since(killed); after < 9*time.Second {
		t.Errorf("b left the rings %s after it was killed, before its Lease could expire", after)
	}
	waitFor(t, ctx, "b's expired Lease to be deleted", func() bool {
		_, err := leases.Get(ctx, "ctl-b", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})

	stopped := time.Now()
	c.halt()
	if _, err := leases.Get(ctx, "ctl-c", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("c, stopped cleanly, did not release its Lease: %v", err)
	}
	waitMembers(t, ctx, []string{"a"}, a)
	// c renewed at most a retry period before it stopped: its Lease would
	// expire no sooner than 9 s after the stop.
	if after := time.Since(stopped); after >= 9*time.Second {
		t.Errorf("c left a's ring %s after it released its Lease, no sooner than the Lease would have expired", after)
	}
	t.Logf("b left %s after it was killed; c %s after it stopped", stopped.Sub(killed).Round(time.Second), time.Since(stopped).Round(time.Millisecond))
	if st := a.m.Status(); st.Kind != "leases" || st.Lease != ns+"/ctl-a" || st.LastRenew.IsZero() {
		t.Errorf("a's status %+v", st)
	}
}
