package informer

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/encstore"
)

// countingCodec counts what the store encodes and decodes.
type countingCodec struct {
	encstore.Codec
	encodes, decodes atomic.Int64
}

func (c *countingCodec) Encode(dst []byte, obj runtime.Object) ([]byte, error) {
	c.encodes.Add(1)
	return c.Codec.Encode(dst, obj)
}

func (c *countingCodec) Decode(data []byte) (runtime.Object, error) {
	c.decodes.Add(1)
	return c.Codec.Decode(data)
}

func newCountingInformer(t *testing.T, lw cache.ListerWatcher, resync time.Duration) (*sharedIndexInformer, *countingCodec) {
	t.Helper()
	c := &countingCodec{Codec: encstore.Protobuf(func() runtime.Object { return &corev1.Pod{} })}
	inf, err := newSharedIndexInformer(lw, &corev1.Pod{}, Options{
		SharedIndexInformerOptions: cache.SharedIndexInformerOptions{ResyncPeriod: resync},
		NewStore:                   encstore.NewIndexer(encstore.Options{Codec: c}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return inf, c
}

func run(t *testing.T, inf cache.SharedIndexInformer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg wait.Group
	wg.StartWithContext(ctx, inf.RunWithContext)
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}
}

func pod(name, rv, label string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv, Labels: map[string]string{"v": label}}}
}

// events records what a handler received, in order.
type events struct {
	mu      sync.Mutex
	updates [][2]*corev1.Pod
	adds    []string
	signal  chan struct{}
}

func newEvents() *events { return &events{signal: make(chan struct{}, 1)} }

func (e *events) notify() {
	select {
	case e.signal <- struct{}{}:
	default:
	}
}

func (e *events) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			e.mu.Lock()
			e.adds = append(e.adds, obj.(*corev1.Pod).Name)
			e.mu.Unlock()
			e.notify()
		},
		UpdateFunc: func(old, new any) {
			e.mu.Lock()
			e.updates = append(e.updates, [2]*corev1.Pod{old.(*corev1.Pod), new.(*corev1.Pod)})
			e.mu.Unlock()
			e.notify()
		},
	}
}

func (e *events) waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.After(wait.ForeverTestTimeout)
	for {
		e.mu.Lock()
		ok := cond()
		e.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-e.signal:
		case <-deadline:
			t.Fatal("timed out waiting for the handler's events")
		}
	}
}

func TestAnUpdateGivesTheOldObjectDecoded(t *testing.T) {
	source := newFakeControllerSource(t)
	source.Add(pod("a", "", "old"))
	inf, _ := newCountingInformer(t, source, 0)
	ev := newEvents()
	if _, err := inf.AddEventHandler(ev.handler()); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	source.Modify(pod("a", "", "new"))
	ev.waitFor(t, func() bool { return len(ev.updates) == 1 })
	old, new := ev.updates[0][0], ev.updates[0][1]
	if old.Labels["v"] != "old" || new.Labels["v"] != "new" {
		t.Fatalf("update from %q to %q, want old to new", old.Labels["v"], new.Labels["v"])
	}
	if old.ResourceVersion == new.ResourceVersion {
		t.Fatalf("old and new at the same resourceVersion %s", old.ResourceVersion)
	}
}

// TestAnUnchangedRelistDecodesAndEncodesNothing: when a re-list brings the
// same objects back and no handler is due for a resync, client-go gives no
// handler anything for them; here the store then neither decodes the objects
// they replace nor encodes the listed ones. (Until the informer's first
// resync check, client-go counts every handler as due: an informer without
// resyncs gives an unchanged re-list to every handler, as updates.)
//
// packed: the lists hand the informer objects its store packed
// (encstore.Packed), as leanstore's lists do under an encoded store; an
// unchanged object's pack shares the stored bytes, and applying it decodes
// nothing.
func TestAnUnchangedRelistDecodesAndEncodesNothing(t *testing.T) {
	t.Run("decoded", func(t *testing.T) { testUnchangedRelist(t, false) })
	t.Run("packed", func(t *testing.T) { testUnchangedRelist(t, true) })
}

func testUnchangedRelist(t *testing.T, packed bool) {
	source := newFakeControllerSource(t)
	for _, n := range []string{"a", "b", "c", "d"} {
		source.Add(pod(n, "", "same"))
	}
	var lists atomic.Int32
	var inf *sharedIndexInformer
	lw := &cache.ListWatch{
		ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
			lists.Add(1)
			list, err := source.List(o)
			if err != nil || !packed {
				return list, err
			}
			return packList(inf.indexer.(*encstore.Store), list)
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) { return source.Watch(o) },
	}
	inf, codec := newCountingInformer(t, lw, time.Second)
	ev := newEvents()
	if _, err := inf.AddEventHandlerWithResyncPeriod(ev.handler(), 0); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	ev.waitFor(t, func() bool { return len(ev.adds) == 4 })
	// The first resync check (after the informer's resync period) finds the
	// handler not due.
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		return !inf.processor.anySyncing(), nil
	}); err != nil {
		t.Fatal("the informer never checked for resyncs")
	}
	encodes, decodes := codec.encodes.Load(), codec.decodes.Load()

	// A new object that only the re-list shows, then the re-list.
	source.AddDropWatch(pod("e", "", "new"))
	source.ResetWatch()
	ev.waitFor(t, func() bool { return len(ev.adds) == 5 })
	// Removing a handler waits for the informer to finish the delta it is
	// processing (the whole re-list).
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Fatal(err)
	}
	decodes += 5 // the late handler's initial list decodes every object once
	if lists.Load() < 2 {
		t.Fatalf("%d lists, want a re-list", lists.Load())
	}
	if got := codec.encodes.Load() - encodes; got != 1 {
		t.Fatalf("the re-list encoded %d objects, want 1 (the new one)", got)
	}
	wantDecodes := int64(0)
	if packed {
		wantDecodes = 1 // the new object, unpacked for its handler
	}
	if got := codec.decodes.Load() - decodes; got != wantDecodes {
		t.Fatalf("the re-list decoded %d objects, want %d", got, wantDecodes)
	}
	if len(ev.updates) != 0 {
		t.Fatalf("%d updates for unchanged objects to a handler that wants no resync", len(ev.updates))
	}

	// A change still reaches the handler that wants no resync.
	source.Modify(pod("a", "", "changed"))
	ev.waitFor(t, func() bool { return len(ev.updates) == 1 })
	if old, new := ev.updates[0][0], ev.updates[0][1]; old.Labels["v"] != "same" || new.Labels["v"] != "changed" {
		t.Fatalf("update from %q to %q, want same to changed", old.Labels["v"], new.Labels["v"])
	}
}

// packedList is a list of objects an encoded store packed, as leanstore's
// reflector hands them over.
type packedList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []runtime.Object
}

func (l *packedList) DeepCopyObject() runtime.Object { c := *l; return &c }

func packList(s *encstore.Store, list runtime.Object) (runtime.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	out := &packedList{ListMeta: metav1.ListMeta{ResourceVersion: lm.GetResourceVersion()}}
	for _, item := range items {
		p, err := s.Pack(item)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, p)
	}
	return out, nil
}

// An informer decoding packed objects yields to a handler that has fallen
// behind (beforeUnpack), so that few objects wait decoded in its buffer, and
// never waits for one that does not run: with its only handler blocked on
// the first object, the informer still takes in its whole first list,
// yielding before each object decoded while the handler had more than
// handlerBacklog waiting.
func TestUnpackYieldsToABackloggedHandlerWithoutWaitingForIt(t *testing.T) {
	const n = 200
	source := newFakeControllerSource(t)
	for i := range n {
		source.Add(pod(fmt.Sprintf("p%03d", i), "", "x"))
	}
	var inf *sharedIndexInformer
	lw := &cache.ListWatch{
		ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list, err := source.List(o)
			if err != nil {
				return nil, err
			}
			return packList(inf.indexer.(*encstore.Store), list)
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) { return source.Watch(o) },
	}
	inf, _ = newCountingInformer(t, lw, 0)
	var yields atomic.Int64
	catchUpYield = func() { yields.Add(1); goruntime.Gosched() }
	t.Cleanup(func() { catchUpYield = goruntime.Gosched })
	gate := make(chan struct{})
	var added atomic.Int64
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {
		<-gate
		added.Add(1)
	}}); err != nil {
		t.Fatal(err)
	}
	// The informer stops only once its handler returns: the gate opens first.
	closeGate := sync.OnceFunc(func() { close(gate) })
	ctx, cancel := context.WithCancel(context.Background())
	var wg wait.Group
	wg.StartWithContext(ctx, inf.RunWithContext)
	t.Cleanup(func() {
		closeGate()
		cancel()
		wg.Wait()
	})
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		return inf.HasSynced(), nil
	}); err != nil {
		t.Fatal("the informer did not sync while its handler was blocked")
	}
	// The handler holds one object and has one more at hand; every object
	// decoded after the next handlerBacklog found it behind. (One or two
	// fewer when the listener had not counted the last one yet.)
	if got, want := yields.Load(), int64(n-2-handlerBacklog-2)*catchUpYields; got < want {
		t.Fatalf("%d yields to the blocked handler, want at least %d", got, want)
	}
	closeGate()
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		return added.Load() == n, nil
	}); err != nil {
		t.Fatalf("the handler received %d of %d objects", added.Load(), n)
	}
}

func TestTheInformerRunsOverClientGoStore(t *testing.T) {
	source := newFakeControllerSource(t)
	source.Add(pod("a", "", "old"))
	inf, err := NewWithStore(source, &corev1.Pod{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ev := newEvents()
	if _, err := inf.AddEventHandler(ev.handler()); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	source.Modify(pod("a", "", "new"))
	ev.waitFor(t, func() bool { return len(ev.updates) == 1 })
	if ev.updates[0][0].Labels["v"] != "old" {
		t.Fatalf("old object labelled %q, want old", ev.updates[0][0].Labels["v"])
	}
	obj, exists, err := inf.GetStore().GetByKey("ns/a")
	if err != nil || !exists || obj.(*corev1.Pod).Labels["v"] != "new" {
		t.Fatalf("store holds %v (exists %v, err %v), want the new object", obj, exists, err)
	}
}

// TestDynamicAndMetadataObjects runs the informer over encoded stores of
// unstructured objects (CBOR) and of PartialObjectMetadata (protobuf, with
// their TypeMeta), as dynamic and metadata-only informers hold them.
func TestDynamicAndMetadataObjects(t *testing.T) {
	cases := []struct {
		name    string
		example runtime.Object
		codec   encstore.Codec
		obj     func(label string) runtime.Object
		label   func(obj any) string
	}{
		{
			name:    "unstructured",
			example: &unstructured.Unstructured{},
			codec:   encstore.UnstructuredCBOR(),
			obj: func(label string) runtime.Object {
				return &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "example.com/v1", "kind": "Widget",
					"metadata": map[string]any{"name": "w", "namespace": "ns", "labels": map[string]any{"v": label}},
					"spec":     map[string]any{"size": int64(3)},
				}}
			},
			label: func(obj any) string { return obj.(*unstructured.Unstructured).GetLabels()["v"] },
		},
		{
			name:    "metadata",
			example: &metav1.PartialObjectMetadata{},
			codec:   encstore.Protobuf(func() runtime.Object { return &metav1.PartialObjectMetadata{} }),
			obj: func(label string) runtime.Object {
				return &metav1.PartialObjectMetadata{
					TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
					ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", Labels: map[string]string{"v": label}},
				}
			},
			label: func(obj any) string { return obj.(*metav1.PartialObjectMetadata).Labels["v"] },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			source := newFakeControllerSource(t)
			source.Add(c.obj("old"))
			inf, err := NewWithStore(source, c.example, Options{NewStore: encstore.NewIndexer(encstore.Options{Codec: c.codec})})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var updates [][2]string
			got := make(chan struct{}, 1)
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(old, new any) {
				mu.Lock()
				updates = append(updates, [2]string{c.label(old), c.label(new)})
				mu.Unlock()
				got <- struct{}{}
			}}); err != nil {
				t.Fatal(err)
			}
			run(t, inf)
			source.Modify(c.obj("new"))
			select {
			case <-got:
			case <-time.After(wait.ForeverTestTimeout):
				t.Fatal("no update")
			}
			mu.Lock()
			defer mu.Unlock()
			if updates[0] != [2]string{"old", "new"} {
				t.Fatalf("update %v, want old to new", updates[0])
			}
			obj, exists, err := inf.GetStore().GetByKey("ns/w")
			if err != nil || !exists || c.label(obj) != "new" {
				t.Fatalf("store holds %v (exists %v, err %v)", obj, exists, err)
			}
			if c.name == "metadata" && obj.(*metav1.PartialObjectMetadata).Kind != "Pod" {
				t.Fatalf("a PartialObjectMetadata read back without its kind: %+v", obj)
			}
		})
	}
}
