package leancache_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cachetune/cachetune/controllerruntime/leancache"
	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/leanstore"
)

const lastApplied = leanstore.LastAppliedAnnotation

func newNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "leancache-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	return ns.Name
}

func mustCreate(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// names lists the namespace/name of each object of list, sorted.
func names(t *testing.T, list client.ObjectList) []string {
	t.Helper()
	var out []string
	if err := meta.EachListItem(list, func(o runtime.Object) error {
		m, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		out = append(out, m.GetNamespace()+"/"+m.GetName())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func withLastApplied(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.Annotations = map[string]string{lastApplied: `{"big":"copy"}`, "keep": "me"}
	return m
}

// TestManager runs a manager whose cache is leancache's and checks that each
// kind of informer controller-runtime makes is a leanstore informer with
// leanstore's stripping, while controller-runtime's own options keep their
// meaning: DefaultNamespaces, ByObject label and field selectors, transforms
// (after the stripping), SyncPeriod and IndexField. Status, Check and the
// metrics on controller-runtime's registry are read from the running manager.
func TestManager(t *testing.T) {
	leakcheck.Check(t)
	direct, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns, other := newNamespace(t, direct), newNamespace(t, direct)

	mustCreate(t, direct,
		&Gadget{ObjectMeta: withLastApplied(metav1.ObjectMeta{Name: "g1", Namespace: ns}), Spec: GadgetSpec{Color: "red", Size: 1}},
		&Gadget{ObjectMeta: metav1.ObjectMeta{Name: "g2", Namespace: ns}, Spec: GadgetSpec{Color: "blue", Size: 2}},
		&Gadget{ObjectMeta: metav1.ObjectMeta{Name: "g3", Namespace: other}, Spec: GadgetSpec{Color: "red", Size: 3}},
		&corev1.ConfigMap{ObjectMeta: withLastApplied(metav1.ObjectMeta{Name: "labelled", Namespace: ns, Labels: map[string]string{"app": "demo"}})},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unlabelled", Namespace: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "drop", Namespace: ns}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: ns}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
	)

	// The ConfigMap transform records what it is given: leanstore's stripping
	// must have run before it.
	var transformed atomic.Int32
	var sawStripped atomic.Bool
	sawStripped.Store(true)
	cmTransform := func(obj any) (any, error) {
		cm := obj.(*corev1.ConfigMap)
		if len(cm.ManagedFields) > 0 || cm.Annotations[lastApplied] != "" {
			sawStripped.Store(false)
		}
		cm.Annotations = map[string]string{"transformed": "yes"}
		transformed.Add(1)
		return cm, nil
	}
	syncPeriod := time.Second
	lean := leancache.New(leancache.Options{Leanstore: []leanstore.Option{leanstore.WithStripLastApplied()}})
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:   newScheme(),
		NewCache: lean.NewCache,
		Metrics:  metricsserver.Options{BindAddress: "0"},
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{ns: {}},
			ByObject: map[client.Object]cache.ByObject{
				&Gadget{}:           {SyncPeriod: &syncPeriod},
				&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{"app": "demo"}), Transform: cmTransform},
				&corev1.Secret{}:    {Field: fields.OneTermEqualSelector("metadata.name", "keep")},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if leancache.Of(mgr.GetCache()) != lean {
		t.Error("leancache.Of(mgr.GetCache()) is not the Cache whose NewCache made it")
	}
	if err := mgr.AddReadyzCheck("informers", lean.Checker()); err != nil {
		t.Fatal(err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &Gadget{}, "spec.color", func(o client.Object) []string {
		return []string{o.(*Gadget).Spec.Color}
	}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	stopped := false
	stop := func() {
		if !stopped {
			cancel()
			wg.Wait()
			stopped = true
		}
	}
	defer stop()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	c := mgr.GetClient()

	t.Run("custom resource, typed", func(t *testing.T) {
		var list GadgetList
		if err := c.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		if got, want := names(t, &list), []string{ns + "/g1", ns + "/g2"}; !slices.Equal(got, want) {
			t.Errorf("listed %v, want %v (DefaultNamespaces)", got, want)
		}
		var g Gadget
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "g1"}, &g); err != nil {
			t.Fatal(err)
		}
		if g.Spec.Color != "red" || g.Spec.Size != 1 || len(g.ManagedFields) > 0 || g.Annotations[lastApplied] != "" || g.Annotations["keep"] != "me" {
			t.Errorf("cached g1 = spec %+v, %d managedFields, annotations %v; want red/1, stripped, keep=me", g.Spec, len(g.ManagedFields), g.Annotations)
		}
		var red GadgetList
		if err := c.List(ctx, &red, client.InNamespace(ns), client.MatchingFields{"spec.color": "red"}); err != nil {
			t.Fatal(err)
		}
		if got := names(t, &red); !slices.Equal(got, []string{ns + "/g1"}) {
			t.Errorf("index spec.color=red gives %v, want only g1", got)
		}
		// With DefaultNamespaces, GetInformer returns controller-runtime's
		// multi-namespace informer over one leanstore informer per namespace.
		inf, err := mgr.GetCache().GetInformer(ctx, &Gadget{})
		if err != nil {
			t.Fatal(err)
		}
		if st := informerStatus(lean, "controller-runtime@"+ns+"/gadgets.test.cachetune.dev"); st.Wire != string(leanstore.WireJSON) || !st.Synced {
			t.Errorf("Gadget informer status %+v, want wire json, synced", st)
		}
		// SyncPeriod: client-go resyncs send updates with the same object.
		var resyncs atomic.Int32
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
			if o.(*Gadget).ResourceVersion == n.(*Gadget).ResourceVersion {
				resyncs.Add(1)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = inf.RemoveEventHandler(reg) }()
		waitFor(t, "a resync (SyncPeriod 1s)", func() (bool, error) { return resyncs.Load() > 0, nil })
	})

	t.Run("label selector and transform", func(t *testing.T) {
		var list corev1.ConfigMapList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if got := names(t, &list); !slices.Equal(got, []string{ns + "/labelled"}) {
			t.Errorf("listed %v, want only the labelled ConfigMap", got)
		}
		if len(list.Items) == 1 && list.Items[0].Annotations["transformed"] != "yes" {
			t.Errorf("cached ConfigMap annotations %v: the ByObject transform did not run", list.Items[0].Annotations)
		}
		if transformed.Load() == 0 || !sawStripped.Load() {
			t.Errorf("transform ran %d times, saw stripped objects: %v; want it to run after leanstore's stripping", transformed.Load(), sawStripped.Load())
		}
	})

	t.Run("field selector", func(t *testing.T) {
		var list corev1.SecretList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if got := names(t, &list); !slices.Equal(got, []string{ns + "/keep"}) {
			t.Errorf("listed %v, want only the Secret the field selector keeps", got)
		}
	})

	t.Run("unstructured", func(t *testing.T) {
		// The manager's client reads unstructured objects from the server
		// unless told otherwise (client.CacheOptions.Unstructured): ask the cache.
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := mgr.GetCache().List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if got := names(t, list); !slices.Equal(got, []string{ns + "/pod"}) {
			t.Errorf("listed %v, want the one Pod", got)
		}
		if st := informerStatus(lean, "controller-runtime:unstructured@"+ns+"/pods"); st.Wire != string(leanstore.WireJSON) || !st.Synced {
			t.Errorf("unstructured Pod informer status %+v, want wire json, synced", st)
		}
	})

	t.Run("metadata only", func(t *testing.T) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceList"))
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if got := names(t, list); !slices.Equal(got, []string{ns + "/svc"}) {
			t.Errorf("listed %v, want the one Service", got)
		}
		var li *leanstore.Informer
		for _, inf := range lean.Informers() {
			if inf.Name() == "controller-runtime:metadata@"+ns+"/services" {
				li = inf
			}
		}
		if li == nil {
			t.Fatalf("no metadata-only Service informer among %v", lean.Status())
		}
		// What mapping functions see: the stored objects themselves, which the
		// server sends without the resource's kind.
		for _, o := range li.GetStore().List() {
			if gvk := o.(*metav1.PartialObjectMetadata).GroupVersionKind(); gvk != corev1.SchemeGroupVersion.WithKind("Service") {
				t.Errorf("stored PartialObjectMetadata has kind %v, want v1 Service", gvk)
			}
		}
	})

	t.Run("status, check and metrics", func(t *testing.T) {
		want := map[string]string{
			"controller-runtime@" + ns + "/gadgets.test.cachetune.dev": "json",
			"controller-runtime@" + ns + "/configmaps":                 "protobuf",
			"controller-runtime@" + ns + "/secrets":                    "protobuf",
			"controller-runtime:unstructured@" + ns + "/pods":          "json",
			"controller-runtime:metadata@" + ns + "/services":          "protobuf",
		}
		got := map[string]string{}
		for _, st := range lean.Status() {
			got[st.Informer] = st.Wire
			if !st.Synced || st.ConsecutiveFailures > 0 {
				t.Errorf("informer %s: synced %v, %d failures in a row", st.Informer, st.Synced, st.ConsecutiveFailures)
			}
		}
		for name, wire := range want {
			if got[name] != wire {
				t.Errorf("Status has informer %s with wire %q, want %q (all: %v)", name, got[name], wire, got)
			}
		}
		if err := lean.Checker()(&http.Request{}); err != nil {
			t.Errorf("readiness check: %v", err)
		}
		counts := map[string]int{}
		for _, cen := range lean.Census() {
			counts[cen.Informer] = cen.Objects
		}
		if n := counts["controller-runtime@"+ns+"/gadgets.test.cachetune.dev"]; n != 2 {
			t.Errorf("census counts %d Gadgets, want 2", n)
		}
		if v, ok := gauge(t, "cachetune_leanstore_objects", "controller-runtime@"+ns+"/gadgets.test.cachetune.dev"); !ok || v != 2 {
			t.Errorf("cachetune_leanstore_objects on controller-runtime's registry = %v (found %v), want 2", v, ok)
		}
	})

	stop()
	if st := lean.Status(); len(st) != 0 {
		t.Errorf("after the manager stopped, Status still lists %d informers", len(st))
	}
	if _, ok := gauge(t, "cachetune_leanstore_objects", "controller-runtime@"+ns+"/gadgets.test.cachetune.dev"); ok {
		t.Error("after the manager stopped, its informers' metrics are still registered")
	}
}

func informerStatus(lean *leancache.Cache, name string) leanstore.Status {
	for _, st := range lean.Status() {
		if st.Informer == name {
			return st
		}
	}
	return leanstore.Status{}
}

// gauge reads one series of a gauge from controller-runtime's registry.
func gauge(t *testing.T, name, informer string) (float64, bool) {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "informer" && l.GetValue() == informer {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// TestNewCacheRejects: options leanstore cannot honour are an error at once.
func TestNewCacheRejects(t *testing.T) {
	off := false
	for name, tc := range map[string]struct {
		opts cache.Options
		want string
	}{
		"custom NewInformer": {cache.Options{NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, d time.Duration, i toolscache.Indexers) toolscache.SharedIndexInformer {
			return toolscache.NewSharedIndexInformer(lw, obj, d, i)
		}}, "NewInformer is set"},
		"bookmarks off":              {cache.Options{DefaultEnableWatchBookmarks: &off}, "DefaultEnableWatchBookmarks"},
		"bookmarks off for a type":   {cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {EnableWatchBookmarks: &off}}}, "ByObject[*v1.Pod]"},
		"bookmarks off in namespace": {cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {EnableWatchBookmarks: &off}}}, `DefaultNamespaces["a"]`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := leancache.New(leancache.Options{}).NewCache(cfg, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewCache: %v, want an error naming %q", err, tc.want)
			}
		})
	}
	lean := leancache.New(leancache.Options{})
	if _, err := lean.NewCache(cfg, cache.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := lean.NewCache(cfg, cache.Options{}); err == nil {
		t.Error("a second NewCache on one Cache succeeded, want an error: a Cache serves one manager")
	}
}

// TestGetInformerDoesNotBlock is controller-runtime's NonBlockingGetTest with
// a real informer that cannot sync, for an identity without RBAC grants: the
// informer is returned at once, and the readiness check names it and why.
func TestGetInformerDoesNotBlock(t *testing.T) {
	leakcheck.Check(t)
	user, err := env.AddUser(envtest.User{Name: "nobody"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lean := leancache.New(leancache.Options{
		DisableMetrics: true,
		Leanstore: []leanstore.Option{leanstore.WithBackoff(leanstore.Backoff{
			Initial: 20 * time.Millisecond, Factor: 1, Cap: 20 * time.Millisecond, ResetAfter: time.Minute,
		})},
	})
	c, err := lean.NewCache(user.Config(), cache.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { _ = c.Start(ctx) })

	getCtx, getCancel := context.WithTimeout(ctx, 5*time.Second)
	defer getCancel()
	inf, err := c.GetInformer(getCtx, &corev1.Pod{}, cache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	if inf.HasSynced() {
		t.Fatal("the informer of a forbidden resource has synced")
	}
	var checkErr error
	waitFor(t, "the readiness check to report the degraded informer", func() (bool, error) {
		checkErr = lean.Check(ctx)
		return checkErr != nil && strings.Contains(checkErr.Error(), "degraded"), nil
	})
	if msg := checkErr.Error(); !strings.Contains(msg, "controller-runtime/pods") || !strings.Contains(msg, "forbidden") {
		t.Errorf("readiness check says %q, want it to name controller-runtime/pods and the cause (forbidden)", msg)
	}
}

// Test that a manager's own informer options reach leanstore through the
// probe exactly, including selectors with characters that need escaping.
func TestSelectorsReachLeanstore(t *testing.T) {
	leakcheck.Check(t)
	direct, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, direct)
	mustCreate(t, direct,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns, Labels: map[string]string{"tier": "web", "env": "prod"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: ns, Labels: map[string]string{"tier": "db", "env": "prod"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns, Labels: map[string]string{"tier": "web", "env": "dev"}}},
	)
	sel, err := labels.Parse("tier in (web,cache),env!=dev")
	if err != nil {
		t.Fatal(err)
	}
	lean := leancache.New(leancache.Options{DisableMetrics: true})
	c, err := lean.NewCache(cfg, cache.Options{
		Scheme:               newScheme(),
		DefaultLabelSelector: sel,
		DefaultFieldSelector: fields.ParseSelectorOrDie("metadata.namespace=" + ns + ",metadata.name!=zzz"),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { _ = c.Start(ctx) })
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not start")
	}
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	if got := names(t, &list); !slices.Equal(got, []string{ns + "/a"}) {
		t.Errorf("listed %v, want only %s/a", got, ns)
	}
	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	if li := leancache.Unwrap(inf); li == nil || li.Status().Wire != string(leanstore.WireProtobuf) {
		t.Errorf("the ConfigMap informer is %T (leanstore informer %v), want a leanstore informer on protobuf", inf, li)
	}
	// controller-runtime narrows the namespace from the field selector itself.
	if st := lean.Status(); len(st) != 1 || st[0].Informer != fmt.Sprintf("controller-runtime@%s/configmaps", ns) {
		t.Errorf("status %+v, want one informer controller-runtime@%s/configmaps", st, ns)
	}
}

// TestMetricsOfEveryInformer: informers of one cache that share leanstore's
// factory label (all typed, all namespaces) each report, on a registry of the
// caller's, and the registry gathers without error. Registering each
// informer's collectors on the registry failed here as duplicates.
func TestMetricsOfEveryInformer(t *testing.T) {
	leakcheck.Check(t)
	direct, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, direct)
	mustCreate(t, direct,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns, Labels: map[string]string{"metrics-test": "yes"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns, Labels: map[string]string{"metrics-test": "yes"}}},
	)
	reg := prometheus.NewPedanticRegistry()
	lean := leancache.New(leancache.Options{Name: "metrics-test", Registerer: reg})
	c, err := lean.NewCache(cfg, cache.Options{Scheme: newScheme(), DefaultLabelSelector: labels.SelectorFromSet(labels.Set{"metrics-test": "yes"})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { _ = c.Start(ctx) })
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not start")
	}
	for _, list := range []client.ObjectList{&corev1.ConfigMapList{}, &corev1.SecretList{}} {
		if err := c.List(ctx, list); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	objects := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "cachetune_leanstore_objects" {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "informer" {
					objects[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	want := map[string]float64{"metrics-test/configmaps": 1, "metrics-test/secrets": 1}
	for name, n := range want {
		if objects[name] != n {
			t.Errorf("cachetune_leanstore_objects{informer=%q} = %v, want %v (all: %v)", name, objects[name], n, objects)
		}
	}
}
