package leanstore_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

var raceNow = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// readObject reads what a controller reads of a cached object: labels,
// annotations, containers with their env and resources, owner references. It
// returns a number derived from all of it so that the reads are not optimized
// away.
func readObject(obj any) int {
	n := 0
	switch o := obj.(type) {
	case *corev1.Pod:
		for k, v := range o.Labels {
			n += len(k) + len(v)
		}
		for k, v := range o.Annotations {
			n += len(k) + len(v)
		}
		for _, c := range o.Spec.Containers {
			n += len(c.Image)
			for _, e := range c.Env {
				n += len(e.Name) + len(e.Value)
			}
			for name, q := range c.Resources.Limits {
				n += len(name) + int(q.MilliValue()%7)
			}
		}
		for _, r := range o.OwnerReferences {
			n += len(r.Name)
		}
	case *unstructured.Unstructured:
		n += walkUnstructured(o.Object)
	}
	return n
}

func walkUnstructured(v any) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			n += len(k) + walkUnstructured(e)
		}
	case []any:
		for _, e := range x {
			n += walkUnstructured(e)
		}
	case string:
		n += len(x)
	}
	return n
}

// readers reads objs in loops on several goroutines until the returned stop
// function is called.
func readers(objs func() []any) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	sink := make([]int, 3)
	for g := range sink {
		wg.Go(func() {
			for ctx.Err() == nil {
				for _, o := range objs() {
					sink[g] += readObject(o)
				}
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}

func toUnstructured(t *testing.T, p *corev1.Pod) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// TestSharingTwiceWhileReading runs a sharing transform the way client-go does
// under WatchList: twice on each listed object (its temporary store, then the
// FIFO's Replace), the second time on an object whose parts the first pass took
// from cached objects that listers read on other goroutines. Neither pass may
// write into a shared value: with -race a write shows as a data race, and a map
// write as "concurrent map read and map write", a fatal error.
func TestSharingTwiceWhileReading(t *testing.T) {
	for _, flavour := range []string{"typed", "unstructured"} {
		t.Run(flavour, func(t *testing.T) {
			tf := leanstore.Transform(leanstore.WithSharing(true))
			spec := dataset.Spec{Name: "twice", Namespace: "ns"}
			mk := func(i, version int) any {
				p := dataset.NewPod(spec, i, raceNow)
				p.ResourceVersion = fmt.Sprint(version)
				if flavour == "unstructured" {
					return toUnstructured(t, p)
				}
				return p
			}
			var want []any // what the last list must hold: the objects stripped, unshared
			stripManagedFields := leanstore.Transform(leanstore.WithInterning(false))
			list := func(version int) []any {
				objs := make([]any, 32)
				want = make([]any, len(objs))
				for i := range objs {
					objs[i] = mk(i, version)
					want[i], _ = stripManagedFields(objs[i].(runtime.Object).DeepCopyObject())
				}
				for pass := range 2 {
					for i, o := range objs {
						out, err := tf(o)
						if err != nil {
							t.Fatalf("pass %d: %v", pass+1, err)
						}
						objs[i] = out
					}
				}
				return objs
			}
			// The store, swapped whole under a lock as an indexer's Replace is.
			var mu sync.Mutex
			store := list(1)
			stop := readers(func() []any {
				mu.Lock()
				defer mu.Unlock()
				return store
			})
			for version := 2; version <= 4; version++ {
				relisted := list(version) // equal objects decoded anew
				mu.Lock()
				store = relisted
				mu.Unlock()
			}
			stop()
			for i, o := range store {
				if !equality.Semantic.DeepEqual(want[i], o) {
					t.Fatalf("object %d changed by sharing", i)
				}
			}
		})
	}
}

// TestSharingDoesNotLinkInformers gives a Pod informer and a Service informer
// the same content (the Pods' labels and the Services' selectors), and two
// factories the same Pods: sharing must never make two of them hold one map.
func TestSharingDoesNotLinkInformers(t *testing.T) {
	spec := dataset.Spec{Name: "link", Namespace: "ns"}
	pods := leanstore.Transform(leanstore.WithSharing(true))
	services := leanstore.Transform(leanstore.WithSharing(true))
	otherFactory := leanstore.Transform(leanstore.WithSharing(true))
	var ps, qs []*corev1.Pod
	var ss []*corev1.Service
	for i := range 24 {
		p := dataset.NewPod(spec, i, raceNow)
		s := &corev1.Service{}
		s.Namespace, s.Name = "ns", p.Name
		s.Spec.Selector = map[string]string{}
		for k, v := range p.Labels {
			s.Spec.Selector[k] = v
		}
		q := p.DeepCopy()
		for _, step := range []struct {
			tf  cache.TransformFunc
			obj any
		}{{pods, p}, {services, s}, {otherFactory, q}} {
			if _, err := step.tf(step.obj); err != nil {
				t.Fatal(err)
			}
		}
		ps, qs, ss = append(ps, p), append(qs, q), append(ss, s)
	}
	shared := false
	for i := range ps {
		for j := range ps {
			if i != j && sameMap(ps[i].Labels, ps[j].Labels) {
				shared = true // sharing works within the informer
			}
			if sameMap(ps[i].Labels, ss[j].Spec.Selector) {
				t.Fatalf("pod %d's labels and service %d's selector are one map", i, j)
			}
			if sameMap(ps[i].Labels, qs[j].Labels) {
				t.Fatalf("pod %d's labels are shared with pod %d of another factory", i, j)
			}
			if len(ps[i].Spec.Containers) > 0 && len(qs[j].Spec.Containers) > 0 && &ps[i].Spec.Containers[0] == &qs[j].Spec.Containers[0] {
				t.Fatalf("pod %d's containers are shared with pod %d of another factory", i, j)
			}
		}
	}
	if !shared {
		t.Fatal("no two pods of one informer share their labels: sharing did nothing")
	}
	ps[1].Labels["x"] = "y"
	if _, ok := ss[1].Spec.Selector["x"]; ok {
		t.Fatal("a change to a pod's labels changed a service's selector")
	}
}

// sameMap reports whether a and b are one map (not merely equal).
func sameMap(a, b map[string]string) bool {
	return a != nil && b != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// TestSharingClientGoInformersWhileReading runs plain client-go informers
// (typed, and dynamic for unstructured objects) with a sharing transform on the
// real server, with client-go's streaming lists (WatchListClient, on by default,
// runs a transform twice on every listed object). Listers are read in loops
// while the informers re-list (a 410 Gone on their watches) and a second
// factory with the same transform lists the same Pods, adopting the first
// factory's shared values. Under -race any write into a shared value shows.
func TestSharingClientGoInformersWhileReading(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 32)
	proxy := startProxy(t)
	cfg := proxy.Config(srv.Config)
	typedTF := leanstore.Transform(leanstore.WithSharing(true))

	runCtx, stop := context.WithCancel(ctx)
	a := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(cfg), 0,
		informers.WithNamespace(ns), informers.WithTransform(typedTF))
	defer a.Shutdown()
	d := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(cfg), 0, ns, nil)
	defer d.Shutdown()
	defer stop()
	typed := a.Core().V1().Pods().Informer()
	dyn := d.ForResource(dataset.PodsGVR).Informer()
	if err := dyn.SetTransform(leanstore.Transform(leanstore.WithSharing(true))); err != nil {
		t.Fatal(err)
	}
	a.Start(runCtx.Done())
	d.Start(runCtx.Done())
	if !cache.WaitForCacheSync(runCtx.Done(), typed.HasSynced, dyn.HasSynced) {
		t.Fatal("informers did not sync")
	}
	stopReaders := readers(func() []any { return append(typed.GetStore().List(), dyn.GetStore().List()...) })
	defer stopReaders()

	b := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(cfg), 0,
		informers.WithNamespace(ns), informers.WithTransform(typedTF))
	defer func() { stop(); b.Shutdown() }()
	second := b.Core().V1().Pods().Informer()
	b.Start(runCtx.Done())
	if !cache.WaitForCacheSync(runCtx.Done(), second.HasSynced) {
		t.Fatal("second factory did not sync")
	}
	pods := srv.Clientset().CoreV1().Pods(ns)
	victim := byName(podPointers(listPods(t, ctx, ns)))[0].Name
	for round := range 3 {
		before := proxy.Counts().ByResourceVerb["pods"][faults.WatchList]
		proxy.EndWatches(faults.Match{Resource: "pods", Verb: faults.Watch}, faults.Gone())
		proxy.EndWatches(faults.Match{Resource: "pods", Verb: faults.WatchList}, faults.Gone())
		waitFor(t, ctx, "three streaming re-lists", func() bool {
			return proxy.Counts().ByResourceVerb["pods"][faults.WatchList] >= before+3
		})
		// A change made after the re-lists started is in every cache only once
		// each re-list has been transformed (twice) and stored.
		value := fmt.Sprint("round-", round)
		patch := fmt.Sprintf(`{"metadata":{"labels":{"round":%q}}}`, value)
		if _, err := pods.Patch(ctx, victim, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the change in every cache", func() bool {
			for _, inf := range []cache.SharedIndexInformer{typed, second, dyn} {
				obj, ok, _ := inf.GetStore().GetByKey(ns + "/" + victim)
				if !ok || obj.(metav1.Object).GetLabels()["round"] != value {
					return false
				}
			}
			return true
		})
	}
	stopReaders()
	if c := proxy.Counts().ByResourceVerb["pods"]; c[faults.List] != 0 {
		t.Errorf("server saw %v: a LIST means client-go gave up streaming lists (the transform failed its second run)", c)
	}
	want := serverState(t, ctx, ns)
	for _, inf := range []cache.SharedIndexInformer{typed, second, dyn} {
		if got := cacheState(inf); !sameState(got, want) {
			t.Errorf("cache %v, server %v", got, want)
		}
	}
}

func listPods(t *testing.T, ctx context.Context, ns string) []corev1.Pod {
	t.Helper()
	list, err := srv.Clientset().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestSharingLeanInformerWhileReading runs leanstore's own Pod informer with
// sharing on the real server. Each MODIFIED event, and each changed object of
// the lists a 410 on every watch forces, is walked beside the version the
// cache holds, taking that version's unchanged parts, while listers and an
// update handler read the cached versions on other goroutines. Under -race
// any write into a cached version shows. At the end the cache must hold the
// server's objects field by field (stripped as leanstore strips, unshared).
func TestSharingLeanInformerWhileReading(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	seedPods(t, ctx, ns, 32)
	proxy := startProxy(t)

	f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(proxy.Config(srv.Config)), 0,
		leanstore.WithNamespace(ns), leanstore.WithSharing(true), leanstore.WithLogger(logr.Discard()))
	inf := f.Core().V1().Pods().Informer()
	var updates atomic.Int64
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
		readObject(oldObj)
		readObject(newObj)
		updates.Add(1)
	}}); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer f.Shutdown()
	defer stop()
	f.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	stopReaders := readers(func() []any { return inf.GetStore().List() })
	defer stopReaders()

	pods := srv.Clientset().CoreV1().Pods(ns)
	var names []string
	for _, p := range listPods(t, ctx, ns) {
		names = append(names, p.Name)
	}
	for round := range 4 {
		relisting := round == 2
		var lift func()
		if relisting {
			// Every watch expires: the changes below reach the cache by lists.
			lift = proxy.AddRule(faults.Rule{Match: faults.Match{Resource: "pods", Verb: faults.Watch}, Fault: faults.Gone()})
			proxy.EndWatches(faults.Match{Resource: "pods"}, faults.Gone())
		}
		value := fmt.Sprint("round-", round)
		for i, name := range names {
			patch := fmt.Sprintf(`{"metadata":{"labels":{"round":%q}}}`, value)
			if _, err := pods.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 { // a status change: the rest of the status is unchanged
				patch := fmt.Sprintf(`{"status":{"message":%q}}`, value)
				if _, err := pods.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
					t.Fatal(err)
				}
			}
		}
		waitFor(t, ctx, value+" in the cache", func() bool {
			return sameState(cacheState(inf), serverState(t, ctx, ns))
		})
		if lift != nil {
			lift()
		}
	}
	stopReaders()
	if updates.Load() == 0 {
		t.Fatal("no update reached the handler")
	}

	strip := leanstore.Transform(leanstore.WithInterning(false))
	for _, p := range listPods(t, ctx, ns) {
		want, err := strip(p.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := inf.GetStore().GetByKey(ns + "/" + p.Name)
		if err != nil || !ok {
			t.Fatalf("%s not in the cache (%v)", p.Name, err)
		}
		g := got.(*corev1.Pod).DeepCopy()
		g.TypeMeta, want.(*corev1.Pod).TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
		if !equality.Semantic.DeepEqual(want, g) {
			t.Errorf("%s differs from the server's: cache %+v, server %+v", p.Name, g, want)
		}
	}
}
