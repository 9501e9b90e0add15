package leanstore

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestPacedHandlerPassesEveryCallAndTicksOnInitialAdds: a handler given to
// a leanstore informer whose heap bound guards the first list
// (pacedHandler) receives every call client-go makes, with its arguments
// unchanged, and the bound's tick runs once for each add of the initial list
// and for nothing else.
func TestPacedHandlerPassesEveryCallAndTicksOnInitialAdds(t *testing.T) {
	pod := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	a, b, a2, c := pod("a", "1"), pod("b", "2"), pod("a", "3"), pod("c", "4")
	gone := cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: b}
	// calls are what client-go calls a handler with: the initial list, then
	// its watch's events, an add of an object outside the list among them.
	calls := func(h cache.ResourceEventHandler) {
		h.OnAdd(a, true)
		h.OnAdd(b, true)
		h.OnAdd(c, false)
		h.OnUpdate(a, a2)
		h.OnDelete(b)
		h.OnDelete(gone)
	}
	record := func(seen *[]string) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(obj any, initial bool) { *seen = append(*seen, fmt.Sprintf("add %p %v", obj, initial)) },
			UpdateFunc: func(old, obj any) { *seen = append(*seen, fmt.Sprintf("update %p %p", old, obj)) },
			DeleteFunc: func(obj any) {
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					*seen = append(*seen, fmt.Sprintf("delete %s gone %p", t.Key, t.Obj))
					return
				}
				*seen = append(*seen, fmt.Sprintf("delete %p", obj))
			},
		}
	}

	var direct, throughPaced []string
	calls(record(&direct))
	ticks := 0
	inf := &Informer{deliveryTick: func() { ticks++ }}
	h := inf.paced(record(&throughPaced))
	if _, ok := h.(pacedHandler); !ok {
		t.Fatalf("an informer with a delivery tick gave the handler as %T, want it paced", h)
	}
	calls(h)
	if !slices.Equal(throughPaced, direct) {
		t.Errorf("the paced handler received\n%q\nwant what the handler receives directly\n%q", throughPaced, direct)
	}
	if ticks != 2 {
		t.Errorf("%d ticks, want one for each of the 2 adds of the initial list", ticks)
	}

	// Without a delivery tick (no heap bound, an encoded store, client-go's
	// own informer) the handler is given to client-go as it is.
	unpaced := &Informer{}
	given := record(&direct)
	if got := unpaced.paced(given); fmt.Sprintf("%T", got) != fmt.Sprintf("%T", given) {
		t.Errorf("an informer without a delivery tick gave the handler as %T, want %T", got, given)
	}
	if got := inf.paced(nil); got != nil {
		t.Errorf("a nil handler was given to client-go as %v, want nil (client-go's own answer to it)", got)
	}
}
