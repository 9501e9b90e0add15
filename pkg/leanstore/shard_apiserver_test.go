package leanstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/shard"
)

// Three static shards, two typed and one metadata-only, split the Pods of a
// namespace: each Pod held by exactly one, each shard about a third, and what
// each held is what its handlers were told.
func TestShardStaticSplitsPods(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 8*time.Minute)
	ns := srv.NewNamespace(t)
	const pods = 3000
	seeded := time.Now()
	seedPods(t, ctx, ns, pods)
	t.Logf("seeded %d Pods in %s", pods, time.Since(seeded).Round(time.Second))

	var reps []*replica
	for i := range 3 {
		m, err := shard.Static(i, 3)
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, startReplica(t, ctx, fmt.Sprintf("static-%d", i), ns, m, i == 2))
	}
	converge(t, ctx, ns, reps, 3, convergeTimeout)
	checkBalanced(t, reps, pods)
	t.Logf("held %v of %d Pods", heldCounts(reps), pods)

	for i, r := range reps {
		s := r.shard()
		if s.Self != fmt.Sprintf("shard-%d", i) || s.By != shard.ByObject || s.Generation != 1 {
			t.Errorf("%s: shard status %+v", r.name, s)
		}
		if held := len(r.inf.GetStore().ListKeys()); s.SkippedListed != int64(pods-held) {
			t.Errorf("%s skipped %d listed Pods and holds %d of %d", r.name, s.SkippedListed, held, pods)
		}
		c := r.factory.Census()
		if len(c) != 1 || c[0].Shard == nil || c[0].Shard.Self != s.Self || len(c[0].Shard.Members) != 3 || c[0].Objects != len(r.inf.GetStore().ListKeys()) {
			t.Errorf("%s: census %+v", r.name, c)
		}
		if err := r.factory.Check(ctx); err != nil {
			t.Errorf("%s: readiness: %v", r.name, err)
		}
		held := float64(len(r.inf.GetStore().ListKeys()))
		for name, want := range map[string]float64{
			"cachetune_leanstore_shard_objects":     held,
			"cachetune_leanstore_shard_members":     3,
			"cachetune_leanstore_shard_rebalancing": 0,
		} {
			if got, ok := gauge(t, r.metrics, name, s.Self); !ok || got != want {
				t.Errorf("%s: %s{shard=%q} = %v (found %v), want %v", r.name, name, s.Self, got, ok, want)
			}
		}
	}

	// Writes reach only the owner; the others skip them.
	w := newPodWriter(ns, 7)
	for range 200 {
		if err := w.step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	converge(t, ctx, ns, reps, 3, convergeTimeout)
	var skipped int64
	for _, r := range reps {
		skipped += r.shard().SkippedEvents
	}
	if skipped == 0 {
		t.Error("no replica skipped a watch event of another shard's Pod")
	}
}

// Three replicas coordinated by Leases split the Pods; one killed (its Lease
// left behind, as SIGKILL leaves it) has its Pods taken by the survivors once
// the Lease expires, inside their watches: each survivor is told ADDED for
// the Pods it took and nothing else, no Replace. One stopped cleanly releases
// its Lease and its Pods move at once. A new replica takes its share while
// Pods are created, updated and deleted, and afterwards the union of the
// stores is a fresh consistent LIST.
func TestShardLeaseRebalance(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 12*time.Minute)
	ns := srv.NewNamespace(t)
	const pods = 2000
	seeded := time.Now()
	seedPods(t, ctx, ns, pods)
	t.Logf("seeded %d Pods in %s", pods, time.Since(seeded).Round(time.Second))

	a := startLeaseReplica(t, ctx, ns, "a", false)
	// b, stopped cleanly below, holds a long Lease: were it not released,
	// the others would wait a minute for it, and a move sooner than that
	// tells the release from the expiry on a machine however loaded.
	bLease := leaseConfig(ns, "b")
	bLease.LeaseDuration = time.Minute
	b := startLeaseReplicaWith(t, ctx, bLease, false)
	c := startLeaseReplica(t, ctx, ns, "c", true)
	converge(t, ctx, ns, []*replica{a, b, c}, 3, convergeTimeout)
	checkBalanced(t, []*replica{a, b, c}, pods)
	t.Logf("a, b, c hold %v of %d Pods", heldCounts([]*replica{a, b, c}), pods)

	// Kill c: its Lease stays until it expires.
	heldByC := len(c.inf.GetStore().ListKeys())
	type mark struct{ adds, updates, deletes int }
	before := map[string]mark{}
	for _, r := range []*replica{a, b} {
		ad, up, de := r.told.counts()
		before[r.name] = mark{ad, up, de}
	}
	killed := time.Now()
	c.kill()
	t.Logf("c stopped in %s", time.Since(killed).Round(time.Millisecond))
	converge(t, ctx, ns, []*replica{a, b}, 2, convergeTimeout)
	// The ring changes once c's Lease has gone unrenewed for its duration, as
	// each survivor observed it (renewals come every retry period); then each
	// survivor lists once inside its watch.
	lc := leaseConfig(ns, "")
	for _, r := range []*replica{a, b} {
		s := r.shard()
		changed := s.LastRebalance.Add(-time.Duration(s.LastRebalanceSeconds * float64(time.Second)))
		if after := changed.Sub(killed); after > lc.LeaseDuration+2*lc.RetryPeriod+loadSlack {
			t.Errorf("%s rebuilt the ring %s after c died, want within the Lease duration (%s) and a retry period", r.name, after, lc.LeaseDuration)
		}
		t.Logf("%s: ring changed %s after c died, re-listed in %.2fs", r.name, changed.Sub(killed).Round(time.Millisecond), s.LastRebalanceSeconds)
	}
	t.Logf("a and b hold %v after c was killed", heldCounts([]*replica{a, b}))
	// The survivors delete the Lease c left behind, so that a replica that
	// starts later does not count c as live for a Lease duration.
	waitFor(t, ctx, "c's expired Lease to be deleted", func() bool {
		_, err := srv.Clientset().CoordinationV1().Leases(ns).Get(ctx, "ctl-c", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	added := 0
	for _, r := range []*replica{a, b} {
		ad, up, de := r.told.counts()
		was := before[r.name]
		if up != was.updates || de != was.deletes {
			t.Errorf("%s was told %d updates and %d deletes while taking c's Pods, want none: a Replace, not a rebalance", r.name, up-was.updates, de-was.deletes)
		}
		added += ad - was.adds
		// Once, or more when a slow re-list was overtaken by another change
		// of the ring (a Lease renewed late on a loaded machine).
		if s := r.shard(); s.Rebalances < 1 {
			t.Errorf("%s did not rebalance after c died", r.name)
		}
	}
	if added != heldByC {
		t.Errorf("the survivors were told %d adds, c held %d", added, heldByC)
	}

	// A clean stop releases the Lease: b's Pods move without waiting for it
	// to expire, which they could do no sooner than a Lease duration after
	// its last renewal (read here before the stop; a later one only moves
	// the expiry further).
	held, err := srv.Clientset().CoordinationV1().Leases(ns).Get(ctx, "ctl-b", metav1.GetOptions{})
	if err != nil || held.Spec.RenewTime == nil {
		t.Fatalf("b's Lease before its stop: %v, %v", held, err)
	}
	expiry := held.Spec.RenewTime.Add(bLease.LeaseDuration)
	stopped := time.Now()
	b.kill()
	t.Logf("b stopped in %s", time.Since(stopped).Round(time.Millisecond))
	converge(t, ctx, ns, []*replica{a}, 1, convergeTimeout)
	if s := a.shard(); s.LastRebalance.Add(-time.Duration(s.LastRebalanceSeconds * float64(time.Second))).After(expiry) {
		t.Errorf("a rebuilt the ring at %s, %s after b released its Lease at %s: want sooner than the Lease's expiry at %s",
			s.LastRebalance, s.LastRebalance.Sub(stopped), stopped, expiry)
	}
	if n := len(a.inf.GetStore().ListKeys()); n != pods {
		t.Errorf("a alone holds %d of %d Pods", n, pods)
	}

	// Two new replicas join while Pods are created, updated and deleted.
	w := newPodWriter(ns, 11)
	writeCtx, stopWrites := context.WithCancel(ctx)
	var writes sync.WaitGroup
	var writeErr error
	writes.Go(func() {
		for writeCtx.Err() == nil {
			if err := w.step(writeCtx); err != nil && writeCtx.Err() == nil {
				writeErr = err
				return
			}
		}
	})
	d := startLeaseReplica(t, ctx, ns, "d", false)
	time.Sleep(time.Second)
	e := startLeaseReplica(t, ctx, ns, "e", false)
	time.Sleep(3 * time.Second)
	stopWrites()
	writes.Wait()
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	truth := converge(t, ctx, ns, []*replica{a, d, e}, 3, convergeTimeout)
	t.Logf("after %d writes during the joins, a, d, e hold %v of %d Pods", w.writes, heldCounts([]*replica{a, d, e}), len(truth))
	checkBalanced(t, []*replica{a, d, e}, len(truth))
	for _, r := range []*replica{a, d, e} {
		if err := r.factory.Check(ctx); err != nil {
			t.Errorf("%s: readiness at rest: %v", r.name, err)
		}
	}
}
