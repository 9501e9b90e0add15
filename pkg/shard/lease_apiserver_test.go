package shard_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/shard"
)

// withoutLeaseWatches returns a copy of cfg whose client cannot watch Leases:
// an informer of Leases that uses it learns of renewals only when it lists
// again, after its reflector's growing backoff, as a watch that runs late on
// a loaded server or process tells of them late.
func withoutLeaseWatches(cfg *rest.Config) *rest.Config {
	return refusing(cfg, func(r *http.Request) error {
		if isLeaseWatch(r) {
			return errors.New("this client watches no Lease")
		}
		return nil
	})
}

// A replica that learns of the others' renewals late does not drop them from
// its ring while they renew in time: before it takes a Lease that it has not
// seen renewed for its duration as expired, it asks the server. Without that,
// a replica whose Lease watch lags keeps a ring without a live member (which
// counts itself in) and the ring changes back and forth with every late
// renewal.
func TestLeaseLateWatchKeepsLiveMembers(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 5*time.Minute)
	ns := srv.NewNamespace(t)
	lc := func(identity string) shard.LeaseConfig {
		return shard.LeaseConfig{Namespace: ns, Group: "ctl", Identity: identity,
			LeaseDuration: 5 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second}
	}
	runCtx, stop := context.WithCancel(ctx)
	var ms []*shard.Membership
	for _, id := range []string{"b", "c"} {
		m, err := shard.NewLeaseMembership(srv.Clientset(), lc(id))
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	late, err := shard.NewLeaseMembership(kubernetes.NewForConfigOrDie(withoutLeaseWatches(srv.Config)), lc("a"))
	if err != nil {
		t.Fatal(err)
	}
	ms = append(ms, late)
	for _, m := range ms {
		m.Start(runCtx)
	}
	defer func() {
		stop()
		for _, m := range ms {
			<-m.Done()
		}
	}()
	waitFor(t, ctx, "a ring of a, b and c at every replica", func() bool {
		for _, m := range ms {
			if st := m.Status(); len(st.Members) != 3 || !st.Member {
				return false
			}
		}
		return true
	})
	// a's reflector lists again after a backoff that doubles from 0.8 s to
	// 30 s: within this window the time between its lists passes the Lease
	// duration several times over. No replica joins or leaves meanwhile, so
	// a's ring must not change at all: any new generation is a flap.
	const window = 45 * time.Second
	start := late.Status()
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(window):
	}
	if st := late.Status(); st.Generation != start.Generation || len(st.Members) != 3 {
		t.Errorf("a's ring went from generation %d %v to %d %v in %s, while b and c renewed every %s: want it unchanged",
			start.Generation, start.Members, st.Generation, st.Members, window, lc("").RetryPeriod)
	}
	for _, m := range ms[:2] {
		if st := m.Status(); len(st.Members) != 3 {
			t.Errorf("%s's ring is %v after the window, want a, b and c", st.Self, st.Members)
		}
	}
}
