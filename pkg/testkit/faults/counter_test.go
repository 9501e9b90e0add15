package faults_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

// waitActed waits until c.Acted reaches want, or a few seconds pass (a
// stream acts when the proxy reaches its next frame boundary, a little after
// the client sees the fault).
func waitActed(c *faults.Counter, want int) int {
	deadline := time.Now().Add(5 * time.Second)
	for c.Acted() < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return c.Acted()
}

// TestCounterTellsFiredFromActed checks, fault by fault, that a rule's
// Counter counts a request it picked as Fired, and as Acted only when the
// client really met the fault.
func TestCounterTellsFiredFromActed(t *testing.T) {
	leakcheck.Check(t)
	lists := faults.Match{Resource: "configmaps", Verb: faults.List}
	for _, tt := range []struct {
		name  string
		fault faults.Fault
		acted int
	}{
		{"a status acts", faults.Status(503, 0), 1},
		{"a cut inside the body acts", faults.Cut(100), 1},
		{"a cut past the body does not", faults.Cut(1 << 20), 0},
		{"a truncate past the body does not", faults.Truncate(1 << 20), 0},
		{"garbage acts", faults.Malformed(), 1},
		{"a cut after an item of a longer list acts", faults.TruncateAfterItems(2), 1},
		{"JSON where protobuf was asked acts", faults.AnswerJSON(), 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "protobuf")
			e.seed(t, 5)
			c := &faults.Counter{}
			e.p.AddRule(faults.Rule{Match: lists, Fault: tt.fault, Counter: c})
			_ = e.listOnce()
			if c.Fired() != 1 || c.Acted() != tt.acted {
				t.Errorf("%v on one list: fired %d, acted %d; want 1 and %d", tt.fault, c.Fired(), c.Acted(), tt.acted)
			}
		})
	}
	t.Run("JSON where JSON was asked does not act", func(t *testing.T) {
		e := newEnv(t, "json")
		e.seed(t, 2)
		c := &faults.Counter{}
		e.p.AddRule(faults.Rule{Match: lists, Fault: faults.AnswerJSON(), Counter: c})
		if err := e.listOnce(); err != nil {
			t.Fatal(err)
		}
		if c.Fired() != 1 || c.Acted() != 0 {
			t.Errorf("AnswerJSON on a JSON list: fired %d, acted %d; want 1 and 0", c.Fired(), c.Acted())
		}
	})
}

// TestCounterOnStreams checks the stream faults: GoneAfterEvents acts only
// once its n-th event passed, DropInitialEventsEnd only when it dropped a
// bookmark, and EndWatchesCounted's streams when they end.
func TestCounterOnStreams(t *testing.T) {
	leakcheck.Check(t)
	streams := faults.Match{Resource: "configmaps", Verb: faults.WatchList}
	t.Run("GoneAfterEvents", func(t *testing.T) {
		e := newEnv(t, "protobuf")
		e.seed(t, 3)
		late, early := &faults.Counter{}, &faults.Counter{}
		remove := e.p.AddRule(faults.Rule{Match: streams, Fault: faults.GoneAfterEvents(10), Counter: late, Count: 1})
		evs, _ := events(t, e.watch(t, streamingList()), time.Second)
		if late.Fired() != 1 || late.Acted() != 0 {
			t.Errorf("GoneAfterEvents(10) on a stream of %d events: fired %d, acted %d; want 1 and 0", len(evs), late.Fired(), late.Acted())
		}
		remove()
		e.p.AddRule(faults.Rule{Match: streams, Fault: faults.GoneAfterEvents(2), Counter: early})
		events(t, e.watch(t, streamingList()), 3*time.Second)
		if early.Fired() != 1 || waitActed(early, 1) != 1 {
			t.Errorf("GoneAfterEvents(2) on a stream of 3 objects: fired %d, acted %d; want 1 and 1", early.Fired(), early.Acted())
		}
	})
	t.Run("DropInitialEventsEnd", func(t *testing.T) {
		e := newEnv(t, "protobuf")
		e.seed(t, 2)
		listed, watched := &faults.Counter{}, &faults.Counter{}
		e.p.AddRule(faults.Rule{Match: streams, Fault: faults.DropInitialEventsEnd(), Counter: listed})
		e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Verb: faults.Watch}, Fault: faults.DropInitialEventsEnd(), Counter: watched})
		events(t, e.watch(t, streamingList()), 2*time.Second)
		events(t, e.watch(t, metav1.ListOptions{}), 500*time.Millisecond)
		if waitActed(listed, 1) != 1 {
			t.Errorf("a streaming list's bookmark dropped: acted %d, want 1", listed.Acted())
		}
		if watched.Fired() != 1 || watched.Acted() != 0 {
			t.Errorf("a watch without bookmarks: fired %d, acted %d; want 1 and 0", watched.Fired(), watched.Acted())
		}
	})
	t.Run("EndWatchesCounted", func(t *testing.T) {
		e := newEnv(t, "json")
		e.seed(t, 1)
		w := e.watch(t, metav1.ListOptions{})
		deadline := time.Now().Add(5 * time.Second)
		for e.p.Counts().ByVerb[faults.Watch] == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		c := e.p.EndWatchesCounted(faults.Match{Resource: "configmaps"}, faults.Gone())
		if _, closed := events(t, w, 5*time.Second); !closed {
			t.Fatal("the watch did not end")
		}
		if c.Fired() != 1 || waitActed(c, 1) != 1 {
			t.Errorf("EndWatchesCounted on one watch: fired %d, acted %d; want 1 and 1", c.Fired(), c.Acted())
		}
		if none := e.p.EndWatchesCounted(faults.Match{Resource: "secrets"}, faults.Gone()); none.Fired() != 0 {
			t.Errorf("EndWatchesCounted on no watch: fired %d", none.Fired())
		}
	})
}

// TestCountsByUserAgent checks that requests are counted per client when
// each has its own User-Agent.
func TestCountsByUserAgent(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, "json")
	for agent, lists := range map[string]int{"first": 2, "second": 1} {
		cfg := e.p.Config(srv.Config)
		cfg.UserAgent = agent
		cs := kubernetes.NewForConfigOrDie(cfg)
		for range lists {
			if _, err := cs.CoreV1().ConfigMaps(e.ns).List(e.ctx, metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	by := e.p.Counts().ByUserAgent
	if by["first"][faults.List] != 2 || by["second"][faults.List] != 1 {
		t.Errorf("lists by user agent %v, want first 2 and second 1", by)
	}
}
