package leanstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/shard"
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
	m       *shard.Membership
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
func startReplica(t *testing.T, ctx context.Context, name, ns string, m *shard.Membership, metadataOnly bool) *replica {
	t.Helper()
	return startReplicaWith(t, ctx, name, m, metadataOnly, leanstore.WithNamespace(ns), leanstore.WithShard(m, shard.ByObject))
}

// startReplicaWith starts a Pod informer with these options (its namespace
// or selector, and its WithShard), named name, of membership m.
func startReplicaWith(t *testing.T, ctx context.Context, name string, m *shard.Membership, metadataOnly bool, extra ...leanstore.Option) *replica {
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
				problems = append(problems, fmt.Sprintf("%s: shard status %+v, membership %+v, want %d members and no rebalance", r.name, s, r.m.Status(), want))
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
func leaseConfig(ns, identity string) shard.LeaseConfig {
	return shard.LeaseConfig{Namespace: ns, Group: "ctl", Identity: identity,
		LeaseDuration: 10 * time.Second, RenewDeadline: 7 * time.Second, RetryPeriod: time.Second}
}

func startLeaseReplica(t *testing.T, ctx context.Context, ns, identity string, crash bool) *replica {
	t.Helper()
	return startLeaseReplicaWith(t, ctx, leaseConfig(ns, identity), crash)
}

func startLeaseReplicaWith(t *testing.T, ctx context.Context, lc shard.LeaseConfig, crash bool) *replica {
	t.Helper()
	identity, ns := lc.Identity, lc.Namespace
	client := srv.Clientset()
	if crash {
		client = kubernetes.NewForConfigOrDie(keepingLeases(srv.Config))
	}
	m, err := shard.NewLeaseMembership(client, lc)
	if err != nil {
		t.Fatal(err)
	}
	return startReplica(t, ctx, identity, ns, m, false)
}

// keepingLeases returns a copy of cfg whose client cannot delete Leases: a
// membership that uses it leaves its Lease behind when it stops (its release
// fails), as a process killed with SIGKILL does, and the other replicas take
// its objects only once the Lease expires.
func keepingLeases(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/leases/") {
				return nil, errors.New("this client deletes no Lease")
			}
			return rt.RoundTrip(r)
		})
	})
	return c
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
