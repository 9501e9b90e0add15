package leanstore_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// shardedFactory is what the tests need of a leanstore factory of any kind.
type shardedFactory interface {
	StartWithContext(context.Context)
	Shutdown()
	Status() []leanstore.Status
	Census() []leanstore.Census
	Check(context.Context) error
}

// replica is one sharded Pod informer: a replica of a controller.
type replica struct {
	name    string
	m       *leanstore.Membership
	factory shardedFactory
	inf     cache.SharedIndexInformer
	told    *toldState
	metrics *prometheus.Registry
	stop    context.CancelFunc
	stopped bool
}

// toldState is what a replica's event handlers were told: key to
// resourceVersion, with adds, updates and deletes counted.
type toldState struct {
	mu                     sync.Mutex
	objs                   map[string]string
	adds, updates, deletes int
}

func (s *toldState) handler() cache.ResourceEventHandler {
	set := func(obj any, add bool) {
		m, err := metaOf(obj)
		if err != nil {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.objs[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
		if add {
			s.adds++
		} else {
			s.updates++
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { set(obj, true) },
		UpdateFunc: func(_, obj any) { set(obj, false) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			m, err := metaOf(obj)
			if err != nil {
				return
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.objs, m.GetNamespace()+"/"+m.GetName())
			s.deletes++
		},
	}
}

func (s *toldState) counts() (adds, updates, deletes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.adds, s.updates, s.deletes
}

func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not an object", obj)
	}
	return m, nil
}

func storeOf(inf cache.SharedIndexInformer) map[string]string {
	out := map[string]string{}
	for _, obj := range inf.GetStore().List() {
		if m, err := metaOf(obj); err == nil {
			out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
		}
	}
	return out
}

// startReplica starts a sharded Pod informer of namespace ns: typed, or
// metadata-only when metadataOnly is set (a second kind of factory, which
// must split objects the same way).
func startReplica(t *testing.T, ctx context.Context, name, ns string, m *leanstore.Membership, metadataOnly bool) *replica {
	t.Helper()
	return startReplicaWith(t, ctx, name, m, metadataOnly, leanstore.WithNamespace(ns), leanstore.WithShard(m, leanstore.ShardByObject))
}

// startReplicaWith starts a Pod informer with these options (its namespace
// or selector, and its WithShard), named name, of membership m.
func startReplicaWith(t *testing.T, ctx context.Context, name string, m *leanstore.Membership, metadataOnly bool, extra ...leanstore.Option) *replica {
	t.Helper()
	r := &replica{name: name, m: m, told: &toldState{objs: map[string]string{}}, metrics: prometheus.NewPedanticRegistry()}
	opts := append([]leanstore.Option{leanstore.WithName(name), leanstore.WithMetrics(r.metrics)}, extra...)
	if metadataOnly {
		f := leanstore.NewMetadataSharedInformerFactory(metadata.NewForConfigOrDie(srv.Config), 0, opts...)
		r.factory, r.inf = f, f.ForResource(dataset.PodsGVR).Informer()
	} else {
		f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(srv.Config), 0, opts...)
		r.factory, r.inf = f, f.Core().V1().Pods().Informer()
	}
	if _, err := r.inf.AddEventHandler(r.told.handler()); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	r.stop = stop
	r.factory.StartWithContext(runCtx)
	t.Cleanup(r.kill)
	return r
}

// kill stops the replica and waits for its goroutines (and, unless the Lease
// is kept, the release of its Lease).
func (r *replica) kill() {
	if r.stopped {
		return
	}
	r.stopped = true
	r.stop()
	r.factory.Shutdown()
}

func (r *replica) shard() *leanstore.ShardStatus {
	st := r.factory.Status()
	if len(st) != 1 {
		return nil
	}
	return st[0].Shard
}

// truthOf is a fresh consistent LIST of the namespace's Pods: key to
// resourceVersion.
func truthOf(ctx context.Context, ns string) (map[string]string, error) {
	return truthWith(ctx, ns, "")
}

// truthWith is a fresh consistent LIST of the Pods of namespace ns (every
// namespace when "") that match selector: key to resourceVersion.
func truthWith(ctx context.Context, ns, selector string) (map[string]string, error) {
	list, err := srv.Clientset().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list.Items))
	for _, p := range list.Items {
		out[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	return out, nil
}

// partitionProblems compares the live replicas with the truth: every object
// held by exactly one, at the truth's resourceVersion, nothing else held, and
// each replica's handlers told exactly what its store holds.
func partitionProblems(truth map[string]string, reps []*replica) []string {
	var problems []string
	holders := map[string][]string{}
	for _, r := range reps {
		store := storeOf(r.inf)
		for k, rv := range store {
			holders[k] = append(holders[k], r.name)
			if want, ok := truth[k]; !ok {
				problems = append(problems, fmt.Sprintf("%s holds %s, which the server does not have", r.name, k))
			} else if rv != want {
				problems = append(problems, fmt.Sprintf("%s holds %s at %s, the server at %s", r.name, k, rv, want))
			}
		}
		r.told.mu.Lock()
		for k, rv := range store {
			if told, ok := r.told.objs[k]; !ok || told != rv {
				problems = append(problems, fmt.Sprintf("%s's handlers were told %s at %q, its store has %s", r.name, k, told, rv))
			}
		}
		for k := range r.told.objs {
			if _, ok := store[k]; !ok {
				problems = append(problems, fmt.Sprintf("%s's handlers were told %s, which its store does not hold", r.name, k))
			}
		}
		r.told.mu.Unlock()
	}
	for k := range truth {
		switch h := holders[k]; len(h) {
		case 1:
		case 0:
			problems = append(problems, fmt.Sprintf("%s is held by no replica", k))
		default:
			problems = append(problems, fmt.Sprintf("%s is held by %d replicas: %v", k, len(h), h))
		}
	}
	slices.Sort(problems)
	return problems
}

// converge waits until the live replicas partition the truth, which it reads
// again at every try, and the ring is stable with want members; it fails the
// test with what is still wrong when they do not within timeout.
func converge(t *testing.T, ctx context.Context, ns string, reps []*replica, want int, timeout time.Duration) map[string]string {
	t.Helper()
	return convergeTo(t, ctx, func(ctx context.Context) (map[string]string, error) { return truthOf(ctx, ns) }, reps, want, timeout)
}

// convergeTo is converge with the truth read by truthFn.
func convergeTo(t *testing.T, ctx context.Context, truthFn func(context.Context) (map[string]string, error), reps []*replica, want int, timeout time.Duration) map[string]string {
	t.Helper()
	var problems []string
	var truth map[string]string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		if truth, err = truthFn(ctx); err != nil {
			return false, err
		}
		problems = nil
		for _, r := range reps {
			if s := r.shard(); s == nil || len(s.Members) != want || s.Rebalancing {
				problems = append(problems, fmt.Sprintf("%s: shard status %+v, want %d members and no rebalance", r.name, s, want))
			}
		}
		problems = append(problems, partitionProblems(truth, reps)...)
		return len(problems) == 0, nil
	})
	if err != nil {
		t.Fatalf("replicas did not converge in %s (%v); %d problems, first: %s", timeout, err, len(problems), strings.Join(problems[:min(len(problems), 8)], "; "))
	}
	return truth
}

func heldCounts(reps []*replica) []int {
	out := make([]int, len(reps))
	for i, r := range reps {
		out[i] = len(r.inf.GetStore().ListKeys())
	}
	return out
}

func checkBalanced(t *testing.T, reps []*replica, total int) {
	t.Helper()
	fair := float64(total) / float64(len(reps))
	for i, n := range heldCounts(reps) {
		if float64(n) < 0.9*fair || float64(n) > 1.1*fair {
			t.Errorf("%s holds %d of %d Pods, want within 10%% of %.0f", reps[i].name, n, total, fair)
		}
	}
}

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
		m, err := leanstore.StaticShards(i, 3)
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
		if s.Self != fmt.Sprintf("shard-%d", i) || s.By != leanstore.ShardByObject || s.Generation != 1 {
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

// loadSlack is the delay a loaded test machine may add to a Lease's
// observation: renewals and watch events run late when CPUs are shared.
const loadSlack = 10 * time.Second

// convergeTimeout bounds how long replicas may take to partition the Pods
// after a change: a re-list inside the watch takes seconds under -race on a
// loaded machine, and several may run one after the other.
const convergeTimeout = 2 * time.Minute

// gauge returns the value of the metric name whose shard label is shard.
func gauge(t *testing.T, reg *prometheus.Registry, name, shard string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "shard" && l.GetValue() == shard {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// leaseConfig is a Lease membership with timings short enough for a test.
func leaseConfig(ns, identity string) leanstore.LeaseConfig {
	return leanstore.LeaseConfig{Namespace: ns, Group: "ctl", Identity: identity,
		LeaseDuration: 10 * time.Second, RenewDeadline: 7 * time.Second, RetryPeriod: time.Second}
}

func startLeaseReplica(t *testing.T, ctx context.Context, ns, identity string, crash bool) *replica {
	t.Helper()
	return startLeaseReplicaWith(t, ctx, leaseConfig(ns, identity), crash)
}

func startLeaseReplicaWith(t *testing.T, ctx context.Context, lc leanstore.LeaseConfig, crash bool) *replica {
	t.Helper()
	identity, ns := lc.Identity, lc.Namespace
	m, err := leanstore.NewLeaseMembership(srv.Clientset(), lc)
	if err != nil {
		t.Fatal(err)
	}
	if crash {
		m.KeepLeaseOnStopForTest()
	}
	return startReplica(t, ctx, identity, ns, m, false)
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

// podWriter creates, updates and deletes small Pods of a namespace.
type podWriter struct {
	pods typedcorev1.PodInterface
	// labels are added to the labels of every Pod it creates.
	labels map[string]string
	rnd    *rand.Rand
	names  []string
	next   int
	writes int
}

func newPodWriter(ns string, seed uint64) *podWriter {
	return &podWriter{pods: srv.Clientset().CoreV1().Pods(ns), rnd: rand.New(rand.NewPCG(seed, seed))}
}

// step makes one write: a create, an update of a Pod it created, or a delete.
func (w *podWriter) step(ctx context.Context) error {
	w.writes++
	switch op := w.rnd.IntN(3); {
	case op == 0 || len(w.names) == 0:
		name := fmt.Sprintf("w-%05d", w.next)
		w.next++
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"gen": "0"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		maps.Copy(p.Labels, w.labels)
		if _, err := w.pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s: %w", name, err)
		}
		w.names = append(w.names, name)
	case op == 1:
		name := w.names[w.rnd.IntN(len(w.names))]
		patch := fmt.Sprintf(`{"metadata":{"labels":{"gen":"%d"}}}`, w.writes)
		if _, err := w.pods.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("update pod %s: %w", name, err)
		}
	default:
		i := w.rnd.IntN(len(w.names))
		name := w.names[i]
		zero := int64(0)
		if err := w.pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s: %w", name, err)
		}
		w.names = slices.Delete(w.names, i, i+1)
	}
	return nil
}
