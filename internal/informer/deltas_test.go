package informer

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// listOfPods returns n Pods, as a ReplacedAll's objects.
func listOfPods(n int) []any {
	objs := make([]any, n)
	for i := range objs {
		objs[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("pod-%05d", i), ResourceVersion: "7"}}
	}
	return objs
}

// eventLog records a handler's events as text, in order.
type eventLog []string

func (l *eventLog) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) { *l = append(*l, fmt.Sprintf("add %s %v", keyOf(obj), initial)) },
		UpdateFunc: func(old, obj any) {
			*l = append(*l, fmt.Sprintf("update %s", keyOf(obj)))
		},
		DeleteFunc: func(obj any) { *l = append(*l, fmt.Sprintf("delete %s", keyOf(obj))) },
	}
}

func sortedKeys(s cache.Store) []string {
	keys := s.ListKeys()
	slices.Sort(keys)
	return keys
}

func keyOf(obj any) string {
	k, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return k
}

// TestReplaceIntoEmptyGivesClientGosEvents: a list into an empty store gives
// an add per object, in the list's order, with the store already replaced;
// a list into a store that holds objects goes on through client-go's
// reconciliation (deletes first, then updates and adds). Either way a bad key
// changes nothing.
func TestReplaceIntoEmptyGivesClientGosEvents(t *testing.T) {
	objs := listOfPods(3)
	store := cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)
	var log eventLog
	inStore := 0
	h := log.handler()
	counting := cache.ResourceEventHandlerDetailedFuncs{AddFunc: func(obj any, initial bool) {
		inStore = len(store.List()) // what a handler sees in the store
		h.OnAdd(obj, initial)
	}}
	info := cache.ReplacedAllInfo{ResourceVersion: "7", Objects: objs}
	if err := processReplacedAllInfo(klog.Background(), counting, info, store, true, cache.DeletionHandlingMetaNamespaceKeyFunc); err != nil {
		t.Fatal(err)
	}
	want := eventLog{"add ns/pod-00000 true", "add ns/pod-00001 true", "add ns/pod-00002 true"}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Errorf("events of a first list (-want +got):\n%s", diff)
	}
	if inStore != 3 || len(store.ListKeys()) != 3 {
		t.Errorf("the store held %d objects at the last add and %d after; want 3 and 3", inStore, len(store.ListKeys()))
	}

	// A re-list: one object gone, one kept, one new.
	log = nil
	relist := []any{objs[1], listOfPods(4)[3], objs[2]}
	if err := processReplacedAllInfo(klog.Background(), log.handler(), cache.ReplacedAllInfo{ResourceVersion: "8", Objects: relist}, store, false, cache.DeletionHandlingMetaNamespaceKeyFunc); err != nil {
		t.Fatal(err)
	}
	want = eventLog{"delete ns/pod-00000", "update ns/pod-00001", "add ns/pod-00003 false", "update ns/pod-00002"}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Errorf("events of a re-list (-want +got):\n%s", diff)
	}

	// A bad object: an error, no event, the store untouched.
	for _, st := range []cache.Store{cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc), store} {
		before := sortedKeys(st)
		log = nil
		bad := cache.ReplacedAllInfo{ResourceVersion: "9", Objects: []any{objs[0], "not an object"}}
		err := processReplacedAllInfo(klog.Background(), log.handler(), bad, st, false, cache.DeletionHandlingMetaNamespaceKeyFunc)
		var keyErr cache.KeyError
		if !errors.As(err, &keyErr) || len(log) != 0 || !cmp.Equal(before, sortedKeys(st)) {
			t.Errorf("a list with a bad object into a store of %d: error %v, events %v, keys %v after; want a KeyError, none, unchanged", len(before), err, log, sortedKeys(st))
		}
	}
}

// TestReplaceIntoEmptyAllocatesOnlyTheKeyCheck: handing a first list to an
// empty store allocates, beyond what the store's own Replace does, only the
// key each object's check computes. client-go's reconciliation allocates
// three keys per object, a set of them and a record per object, which at
// 10,000 objects lifted a metadata-only cache's start-up peak from about 1.2
// to about 1.4 times its live heap.
func TestReplaceIntoEmptyAllocatesOnlyTheKeyCheck(t *testing.T) {
	const n = 1000
	objs := listOfPods(n)
	info := cache.ReplacedAllInfo{ResourceVersion: "7", Objects: objs}
	handler := cache.ResourceEventHandlerFuncs{}
	storeAlone := testing.AllocsPerRun(5, func() {
		if err := cache.NewStore(cache.MetaNamespaceKeyFunc).Replace(objs, "7"); err != nil {
			t.Fatal(err)
		}
	})
	handedOver := testing.AllocsPerRun(5, func() {
		if err := processReplacedAllInfo(klog.Background(), handler, info, cache.NewStore(cache.MetaNamespaceKeyFunc), true, cache.MetaNamespaceKeyFunc); err != nil {
			t.Fatal(err)
		}
	})
	if extra := handedOver - storeAlone; extra > n+16 {
		t.Errorf("handing %d objects to an empty store allocated %.0f times beyond the store's Replace (%.0f); want at most one key per object", n, extra, storeAlone)
	}
}
