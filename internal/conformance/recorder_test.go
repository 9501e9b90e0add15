package conformance

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestInitialListFlag checks the two checks of the initial list's flag
// (isInInitialList) on recorded calls, without a server: the recorder's, that
// the adds of the initial list come before any other event, and the
// stream's, that they are the same keys at the same resourceVersions as
// client-go's, all in the initial sync.
func TestInitialListFlag(t *testing.T) {
	pod := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	type call struct {
		phase   int32
		name    string
		rv      string
		initial bool
	}
	record := func(calls []call) *recorder {
		var phase atomic.Int32
		r := newObjectRecorder(&phase)
		h := r.handler()
		for _, c := range calls {
			phase.Store(c.phase)
			h.OnAdd(pod(c.name, c.rv), c.initial)
		}
		return r
	}
	clientGo := []call{{0, "a", "10", true}, {0, "b", "11", true}, {1, "c", "20", false}}
	for _, tc := range []struct {
		name      string
		calls     []call
		violation string // what the recorder reports, if anything
		differs   bool   // whether the initial adds differ from client-go's
	}{
		{name: "as client-go", calls: clientGo},
		{name: "in another order", calls: []call{{0, "b", "11", true}, {0, "a", "10", true}, {1, "c", "20", false}}},
		{name: "flag dropped", calls: []call{{0, "a", "10", false}, {0, "b", "11", false}, {1, "c", "20", false}}, differs: true},
		{name: "flag on a watch's add", calls: []call{{0, "a", "10", true}, {0, "b", "11", true}, {1, "c", "20", true}}, differs: true},
		{name: "an initial add after another event", calls: []call{{0, "a", "10", true}, {0, "b", "11", false}, {0, "c", "12", true}},
			violation: "add of ns/c at resourceVersion 12 told as of the initial list after add of ns/b at resourceVersion 11, which was not", differs: true},
		{name: "one missing", calls: []call{{0, "a", "10", true}, {1, "c", "20", false}}, differs: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := record(tc.calls)
			_, vs := r.snapshot()
			switch {
			case tc.violation == "" && len(vs) > 0:
				t.Errorf("violations %q, want none", vs)
			case tc.violation != "" && !(len(vs) == 1 && strings.Contains(vs[0], tc.violation)):
				t.Errorf("violations %q, want one: %q", vs, tc.violation)
			}
			ours := stream{evs: r.toldEvents()}.initialAdds()
			theirs := stream{evs: record(clientGo).toldEvents()}.initialAdds()
			if d := cmp.Diff(theirs, ours); (d != "") != tc.differs {
				t.Errorf("initial adds %q against client-go's %q: differ %v, want %v", ours, theirs, d != "", tc.differs)
			}
		})
	}
}
