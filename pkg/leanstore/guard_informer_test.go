package leanstore_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/leanstore"
)

// counterValue reads a counter of reg by name, summed over its labels.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += counterOf(m)
		}
	}
	return sum
}

func counterOf(m *dto.Metric) float64 { return m.GetCounter().GetValue() }

// TestMutationGuardNamesTheObjectAndPath changes a cached Pod's labels in
// place, as a buggy controller would, with sharing and the mutation guard on:
// CheckMutations must name the object the labels were shared from and the
// field path, and the status, the log and the counter must count it once.
func TestMutationGuardNamesTheObjectAndPath(t *testing.T) {
	leakcheck.Check(t)
	defer leanstore.SetGuardInterval(time.Hour)() // checked here, not on a schedule
	ctx := testContext(t, time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 24)
	reg := prometheus.NewRegistry()
	runCtx, stop := context.WithCancel(ctx)
	f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(srv.Config), 0, leanstore.WithNamespace(ns),
		leanstore.WithSharing(true), leanstore.WithMutationGuard(true), leanstore.WithMetrics(reg))
	defer f.Shutdown()
	defer stop()
	inf := leanstore.Unwrap(f.Core().V1().Pods().Informer())
	lister := f.Core().V1().Pods().Lister()
	f.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if err := inf.CheckMutations(); err != nil {
		t.Fatalf("before any change: %v", err)
	}
	pods, err := lister.Pods(ns).List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	// The pod whose labels others share, and one that shares them.
	var victim *corev1.Pod
	holders := map[string]bool{}
	for _, p := range pods {
		for _, q := range pods {
			if p != q && reflect.ValueOf(p.Labels).UnsafePointer() == reflect.ValueOf(q.Labels).UnsafePointer() {
				victim = p
				holders[ns+"/"+q.Name] = true
			}
		}
		if victim != nil {
			break
		}
	}
	if victim == nil {
		t.Fatal("no two cached pods share their labels")
	}
	holders[ns+"/"+victim.Name] = true
	victim.Labels["bug"] = "written-into-the-cache" // what client-go forbids

	err = inf.CheckMutations()
	var me *leanstore.MutationError
	if !errors.As(err, &me) {
		t.Fatalf("CheckMutations = %v, want a *MutationError", err)
	}
	if me.Path != "metadata.labels" || !holders[me.Key] || me.Informer != inf.Name() {
		t.Errorf("reported %s %s (informer %q); want metadata.labels of one of %v in %s", me.Key, me.Path, me.Informer, holders, inf.Name())
	}
	if !strings.Contains(err.Error(), me.Key) || !strings.Contains(err.Error(), "metadata.labels") {
		t.Errorf("error %q does not name the object and the path", err)
	}
	if err := inf.CheckMutations(); err == nil {
		t.Error("a second check does not find the change any more")
	}
	if st := inf.Status(); st.Mutations != 1 {
		t.Errorf("status counts %d mutations, want 1", st.Mutations)
	}
	if n := counterValue(t, reg, "cachetune_leanstore_mutations_total"); n != 1 {
		t.Errorf("mutations_total = %v, want 1", n)
	}
}

// TestSharingStaysWithinAnInformer runs, on the real server, a factory with a
// Pod informer and a Service informer whose selectors equal the Pods' labels,
// and a second factory with the same Pods: no map may be shared between the
// two informers, or between the two factories.
func TestSharingStaysWithinAnInformer(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 24) // 3 pods an app: the first keeps its labels, the others share a copy
	seeded, err := srv.Clientset().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range seeded.Items[:4] {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "svc-" + strings.Repeat("x", i+1)},
			Spec:       corev1.ServiceSpec{Selector: p.Labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		}
		if _, err := srv.Clientset().CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	a := leanstore.NewSharedInformerFactory(cs, 0, leanstore.WithNamespace(ns), leanstore.WithSharing(true))
	b := leanstore.NewSharedInformerFactory(cs, 0, leanstore.WithNamespace(ns), leanstore.WithSharing(true))
	defer func() { stop(); a.Shutdown(); b.Shutdown() }()
	podsA, svcs, podsB := a.Core().V1().Pods().Informer(), a.Core().V1().Services().Informer(), b.Core().V1().Pods().Informer()
	a.StartWithContext(runCtx)
	b.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), podsA.HasSynced, svcs.HasSynced, podsB.HasSynced) {
		t.Fatal("informers did not sync")
	}
	mapsOf := func(inf cache.SharedIndexInformer, get func(any) map[string]string) map[uintptr]string {
		out := map[uintptr]string{}
		for _, obj := range inf.GetStore().List() {
			if m := get(obj); len(m) > 0 {
				out[uintptr(reflect.ValueOf(m).UnsafePointer())] = keyOf(obj)
			}
		}
		return out
	}
	podLabels := func(obj any) map[string]string { return obj.(*corev1.Pod).Labels }
	a1, a2 := mapsOf(podsA, podLabels), mapsOf(podsB, podLabels)
	sel := mapsOf(svcs, func(obj any) map[string]string { return obj.(*corev1.Service).Spec.Selector })
	if len(a1) == len(podsA.GetStore().List()) {
		t.Errorf("the %d pods of one informer hold %d label maps: nothing shared", len(podsA.GetStore().List()), len(a1))
	}
	for p, k := range a1 {
		if s, ok := sel[p]; ok {
			t.Errorf("pod %s's labels are service %s's selector", k, s)
		}
		if o, ok := a2[p]; ok {
			t.Errorf("pod %s's labels are shared with pod %s of another factory", k, o)
		}
	}
}
