package leanstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/shard"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// Replicas that shard by namespace keep each namespace's Pods together: over
// many namespaces, every namespace's Pods are held by exactly one replica, the
// ring's owner of the namespace, and when a replica joins and another leaves
// (while Pods are created, updated and deleted), the namespaces that change
// owner move whole. Checked against a fresh consistent LIST of the test's
// Pods after each change.
func TestShardByNamespaceMovesWholeNamespaces(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 10*time.Minute)
	// The test's namespaces, each named after the test; its Pods carry the
	// dataset label of the first, which the replicas select on, so that
	// they see only this test's Pods.
	const namespaces, podsPerNamespace = 24, 25
	var nss []string
	for range namespaces {
		nss = append(nss, srv.NewNamespace(t))
	}
	name := nss[0]
	selector := dataset.LabelDataset + "=" + name
	seeded := time.Now()
	var seeding sync.WaitGroup
	errs := make(chan error, len(nss))
	sem := make(chan struct{}, 4)
	for _, ns := range nss {
		seeding.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs <- dataset.Seed(ctx, srv.Config, dataset.Spec{Name: name, Namespace: ns, Pods: podsPerNamespace})
		})
	}
	seeding.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seeded %d Pods in %d namespaces in %s", namespaces*podsPerNamespace, namespaces, time.Since(seeded).Round(time.Second))

	leaseNS := nss[0]
	start := func(id string) *replica {
		m, err := shard.NewLeaseMembership(srv.Clientset(), leaseConfig(leaseNS, id))
		if err != nil {
			t.Fatal(err)
		}
		return startReplicaWith(t, ctx, id, m, id == "b", leanstore.WithLabelSelector(selector), leanstore.WithShard(m, shard.ByNamespace))
	}
	truth := func(ctx context.Context) (map[string]string, error) { return truthWith(ctx, "", selector) }
	settle := func(reps []*replica) map[string]string {
		t.Helper()
		tr := convergeTo(t, ctx, truth, reps, len(reps), convergeTimeout)
		owners := namespaceOwners(t, tr, reps)
		if len(owners) != namespaces {
			t.Errorf("%d namespaces have Pods held, want %d", len(owners), namespaces)
		}
		return owners
	}

	a, b, c := start("a"), start("b"), start("c")
	before := settle([]*replica{a, b, c})
	t.Logf("a, b, c hold %v Pods; namespaces by owner: %v", heldCounts([]*replica{a, b, c}), byOwner(before))

	// d joins, then c leaves (a clean stop: its Lease released), while Pods
	// are created, updated and deleted in every namespace.
	var writers []*podWriter
	for i, ns := range nss {
		w := newPodWriter(ns, uint64(100+i))
		w.labels = map[string]string{dataset.LabelDataset: name}
		writers = append(writers, w)
	}
	writeCtx, stopWrites := context.WithCancel(ctx)
	var writes sync.WaitGroup
	var writeErr error
	var writing atomic.Int64
	writes.Go(func() {
		for i := 0; writeCtx.Err() == nil; i++ {
			if err := writers[i%len(writers)].step(writeCtx); err != nil {
				if writeCtx.Err() == nil {
					writeErr = err
				}
				return
			}
			writing.Add(1)
		}
	})
	d := start("d")
	waitRing(t, ctx, []*replica{a, b, c, d}, 4)
	c.kill()
	waitRing(t, ctx, []*replica{a, b, d}, 3)
	// Enough writes to have reached every namespace.
	for writeCtx.Err() == nil && writing.Load() < 3*namespaces {
		time.Sleep(100 * time.Millisecond)
	}
	stopWrites()
	writes.Wait()
	n := writing.Load()
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	after := settle([]*replica{a, b, d})
	t.Logf("after %d writes during the join and the leave, a, b, d hold %v Pods; namespaces by owner: %v", n, heldCounts([]*replica{a, b, d}), byOwner(after))

	var moved []string
	for ns, was := range before {
		if now := after[ns]; now != was {
			moved = append(moved, fmt.Sprintf("%s: %s to %s", ns, was, now))
		}
	}
	slices.Sort(moved)
	if len(moved) == 0 {
		t.Error("no namespace moved when d joined and c left")
	}
	t.Logf("%d namespaces moved whole: %s", len(moved), strings.Join(moved, "; "))
}

// waitRing waits until every replica has a ring of members members and is
// not rebalancing.
func waitRing(t *testing.T, ctx context.Context, reps []*replica, members int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, convergeTimeout, true, func(context.Context) (bool, error) {
		for _, r := range reps {
			if s := r.shard(); s == nil || len(s.Members) != members || s.Rebalancing {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the replicas did not settle on a ring of %d members in %s: %v", members, convergeTimeout, err)
	}
}

// namespaceOwners checks that the Pods of each namespace of the truth are
// held by one replica, the ring's owner of the namespace, and returns each
// namespace's holder.
func namespaceOwners(t *testing.T, truth map[string]string, reps []*replica) map[string]string {
	t.Helper()
	ring, ok := reps[0].m.Ring()
	if !ok {
		t.Fatalf("%s's membership has no ring", reps[0].name)
	}
	holders := map[string]map[string]int{} // namespace -> replica -> Pods held
	for _, r := range reps {
		for k := range storeOf(r.inf) {
			ns, _, _ := strings.Cut(k, "/")
			if holders[ns] == nil {
				holders[ns] = map[string]int{}
			}
			holders[ns][r.name]++
		}
	}
	owners := map[string]string{}
	for k := range truth {
		ns, _, _ := strings.Cut(k, "/")
		if _, done := owners[ns]; done {
			continue
		}
		h := holders[ns]
		if len(h) != 1 {
			t.Errorf("namespace %s is held by %d replicas (%v), want one", ns, len(h), h)
			continue
		}
		for r := range h {
			owners[ns] = r
			if want := ring.Owner(ns, "", shard.ByNamespace); r != want {
				t.Errorf("namespace %s is held by %s, the ring's owner is %s", ns, r, want)
			}
		}
	}
	return owners
}

// byOwner counts the namespaces of each owner.
func byOwner(owners map[string]string) map[string]int {
	out := map[string]int{}
	for _, o := range owners {
		out[o]++
	}
	return out
}
