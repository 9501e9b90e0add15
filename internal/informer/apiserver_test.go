package informer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/encstore"
	"github.com/cachetune/cachetune/internal/leakcheck"
)

// expiringLW is a ListerWatcher of the Pods of one namespace whose next watch
// fails with 410 Gone when asked to (expire), as a watch whose
// resourceVersion the server compacted away does: the reflector then lists
// again, and the informer applies the re-list.
type expiringLW struct {
	inner  cache.ListerWatcherWithContext
	expire atomic.Bool
	lists  atomic.Int32

	mu      sync.Mutex
	current watch.Interface
}

// expireNow ends the current watch and makes the next one fail with 410.
func (lw *expiringLW) expireNow() {
	lw.expire.Store(true)
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.current != nil {
		lw.current.Stop()
	}
}

var _ cache.ListerWatcherWithContext = (*expiringLW)(nil)

func (lw *expiringLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), o)
}

func (lw *expiringLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), o)
}

func (lw *expiringLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	lw.lists.Add(1)
	return lw.inner.ListWithContext(ctx, o)
}

func (lw *expiringLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if lw.expire.Swap(false) {
		return nil, apierrors.NewResourceExpired("expired by the test")
	}
	w, err := lw.inner.WatchWithContext(ctx, o)
	lw.mu.Lock()
	lw.current = w
	lw.mu.Unlock()
	return w, err
}

// IsWatchListSemanticsUnSupported keeps the reflector on LIST and WATCH, where
// expire's 410 leads to a re-list.
func (lw *expiringLW) IsWatchListSemanticsUnSupported() bool { return true }

// lastSeen records, per key, the object of the last event a handler received
// (nil after a delete).
type lastSeen struct {
	mu   sync.Mutex
	objs map[string]*corev1.Pod
}

func (l *lastSeen) handler() cache.ResourceEventHandler {
	set := func(obj any) {
		key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		l.mu.Lock()
		defer l.mu.Unlock()
		if p, ok := obj.(*corev1.Pod); ok {
			l.objs[key] = p
		} else {
			l.objs[key] = nil
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: set, UpdateFunc: func(_, new any) { set(new) }, DeleteFunc: func(obj any) {
		key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.objs[key] = nil
	}}
}

func (l *lastSeen) present() map[string]*corev1.Pod {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]*corev1.Pod{}
	for k, p := range l.objs {
		if p != nil {
			out[k] = p
		}
	}
	return out
}

// stripManagedFields is the transform both informers run, as leanstore strips.
func stripManagedFields(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		p.ManagedFields = nil
	}
	return obj, nil
}

// TestEncodedInformerAgreesWithClientGoOnARealServer runs client-go's informer
// and this package's over an encoded store side by side on one namespace of a
// real kube-apiserver, through creates, updates, deletes and a re-list forced
// by a 410, and compares both stores and what both handlers last saw with a
// fresh LIST, field by field.
func TestEncodedInformerAgreesWithClientGoOnARealServer(t *testing.T) {
	leakcheck.Check(t)
	ns := srv.NewNamespace(t)
	cs := srv.Clientset()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i := range 30 {
		createPod(ctx, t, cs, ns, i)
	}

	newLW := func() *expiringLW {
		return &expiringLW{inner: cache.ToListerWatcherWithContext(cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", ns, fields.Everything()))}
	}
	oracleLW, encodedLW := newLW(), newLW()
	oracle := cache.NewSharedIndexInformer(oracleLW, &corev1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	encoded, err := NewWithStore(encodedLW, &corev1.Pod{}, Options{
		SharedIndexInformerOptions: cache.SharedIndexInformerOptions{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}},
		NewStore:                   encstore.NewIndexer(encstore.Options{Codec: encstore.Protobuf(func() runtime.Object { return &corev1.Pod{} }), DictSamples: 16}),
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]*lastSeen{}
	for name, inf := range map[string]cache.SharedIndexInformer{"client-go": oracle, "encoded": encoded} {
		if err := inf.SetTransform(stripManagedFields); err != nil {
			t.Fatal(err)
		}
		seen[name] = &lastSeen{objs: map[string]*corev1.Pod{}}
		if _, err := inf.AddEventHandler(seen[name].handler()); err != nil {
			t.Fatal(err)
		}
		var wg wait.Group
		wg.StartWithContext(ctx, inf.RunWithContext)
		defer wg.Wait()
	}
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), oracle.HasSynced, encoded.HasSynced) {
		t.Fatal("the informers did not sync")
	}

	pods := cs.CoreV1().Pods(ns)
	for i := range 10 {
		p, err := pods.Get(ctx, fmt.Sprintf("pod-%02d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Labels["round"] = "1"
		if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 25; i < 30; i++ {
		if err := pods.Delete(ctx, fmt.Sprintf("pod-%02d", i), metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 30; i < 35; i++ {
		createPod(ctx, t, cs, ns, i)
	}
	agree(ctx, t, cs, ns, oracle, encoded, seen)

	// A re-list: both watches end with 410 Gone, and the server changes
	// while the informers list again.
	lists := oracleLW.lists.Load() + encodedLW.lists.Load()
	oracleLW.expireNow()
	encodedLW.expireNow()
	for i := 10; i < 15; i++ {
		if err := pods.Delete(ctx, fmt.Sprintf("pod-%02d", i), metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 35; i < 40; i++ {
		createPod(ctx, t, cs, ns, i)
	}
	agree(ctx, t, cs, ns, oracle, encoded, seen)
	if got := oracleLW.lists.Load() + encodedLW.lists.Load(); got < lists+2 {
		t.Fatalf("%d lists after the 410s, want both informers to list again (%d before)", got, lists)
	}
}

func createPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, i int) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%02d", i), Labels: map[string]string{"app": fmt.Sprintf("app-%d", i%3)}, Annotations: map[string]string{"note": "x"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.example/app:1",
			Env: []corev1.EnvVar{{Name: "INDEX", Value: fmt.Sprint(i)}},
		}}},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// agree waits until both informers' stores and what both handlers last saw
// equal a fresh LIST of the namespace, field by field, and fails with the
// difference if they never do.
func agree(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, oracle, encoded cache.SharedIndexInformer, seen map[string]*lastSeen) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		truth := map[string]*corev1.Pod{}
		for i := range list.Items {
			p := &list.Items[i]
			p.ManagedFields = nil
			truth[ns+"/"+p.Name] = p
		}
		views := map[string]map[string]*corev1.Pod{
			"client-go store":  storeContents(oracle.GetStore()),
			"encoded store":    storeContents(encoded.GetStore()),
			"client-go events": seen["client-go"].present(),
			"encoded events":   seen["encoded"].present(),
		}
		for name, got := range views {
			if d := cmp.Diff(truth, got, cmpopts.EquateEmpty()); d != "" {
				last = fmt.Sprintf("%s (-LIST +%s):\n%s", name, name, d)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the informers never agreed with a fresh LIST: %v\n%s", err, last)
	}
}

func storeContents(s cache.Store) map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for _, obj := range s.List() {
		p := obj.(*corev1.Pod)
		out[p.Namespace+"/"+p.Name] = p
	}
	return out
}
