package reflector

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/internal/shrink"
	"github.com/cachetune/cachetune/pkg/backoff"
)

// fakeSource serves one list page of pods and hands out the watches it is
// given, recording the options of every request.
type fakeSource struct {
	mu      sync.Mutex
	pods    []corev1.Pod
	rv      string
	watches []*watch.FakeWatcher
	lists   []metav1.ListOptions
	watched []metav1.ListOptions
}

func (s *fakeSource) List(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists = append(s.lists, opts)
	return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: s.rv}, Items: s.pods}, nil
}

func (s *fakeSource) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watched = append(s.watched, opts)
	w := s.watches[0]
	s.watches = s.watches[1:]
	return w, nil
}

func (s *fakeSource) Resolve(context.Context) error { return nil }

func (s *fakeSource) requests() (lists, watches []metav1.ListOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]metav1.ListOptions(nil), s.lists...), append([]metav1.ListOptions(nil), s.watched...)
}

// loopReporter records what the loop reports, as leanstore's status reporter does.
type loopReporter struct {
	testReporter
	mu       sync.Mutex
	failures []FailedAttempt
	paths    []ListPath
	started  int
	wire     string
}

func (r *loopReporter) Fail(_ context.Context, f FailedAttempt) {
	r.mu.Lock()
	r.failures = append(r.failures, f)
	r.mu.Unlock()
}

func (r *loopReporter) OK() {}

func (r *loopReporter) Listed(path ListPath, _ string, _, _ int) {
	r.mu.Lock()
	r.paths = append(r.paths, path)
	r.mu.Unlock()
}

func (r *loopReporter) WatchStarted() {
	r.mu.Lock()
	r.started++
	r.mu.Unlock()
}

func (r *loopReporter) WireChanged(wire string) {
	r.mu.Lock()
	r.wire = wire
	r.mu.Unlock()
}

// testListWatch is the ListWatch of pods from src in mode, scoped to the
// label selector app=shop.
func testListWatch(src Source, mode StreamingMode, r Reporter) *ListWatch {
	return New(testConfig(src, mode, r))
}

// testConfig is testListWatch's configuration, for a test to change.
func testConfig(src Source, mode StreamingMode, r Reporter) Config {
	return Config{
		Resource: func() schema.GroupResource { return podsGR },
		Example:  &corev1.Pod{},
		Source:   src,
		ListOptions: func(opts metav1.ListOptions) metav1.ListOptions {
			opts.LabelSelector = "app=shop"
			if opts.FieldSelector != "" {
				opts.FieldSelector += ",scoped-twice"
			}
			opts.FieldSelector += "scoped"
			return opts
		},
		PageSize:  500,
		Streaming: mode,
		Strip:     shrink.NewPipeline(shrink.Config{ManagedFields: true}),
		Backoff:   backoff.Default(),
		Reporter:  r,
		Logger:    logr.Discard(),
	}
}

// next reads w's next event, or fails the test after a while.
func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event from the watch")
	}
	return watch.Event{}
}

// Every request carries the informer's scope once: a paged LIST from the
// latest version (the reflector's "0" is a consistent list), and the watch
// from the list's version, whose objects are stripped.
func TestListWatchScopesEveryRequestOnce(t *testing.T) {
	fw := watch.NewFakeWithChanSize(1, false)
	src := &fakeSource{pods: []corev1.Pod{*testPod("a", "7"), *testPod("b", "8")}, rv: "9", watches: []*watch.FakeWatcher{fw}}
	r := &loopReporter{}
	lw := testListWatch(src, StreamingOff, r)

	got, err := lw.ListWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	l := got.(*objectList)
	if l.ResourceVersion != "9" || len(l.Items) != 2 {
		t.Fatalf("list at %q with %d items, want 9 and 2", l.ResourceVersion, len(l.Items))
	}
	if p := l.Items[0].(*corev1.Pod); p.ManagedFields != nil {
		t.Error("a listed object kept its managedFields")
	}
	w, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "9", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	fw.Modify(testPod("a", "10"))
	ev := next(t, w)
	if p, ok := ev.Object.(*corev1.Pod); !ok || ev.Type != watch.Modified || p.ResourceVersion != "10" || p.ManagedFields != nil {
		t.Errorf("event %s %#v, want a stripped MODIFIED of a at 10", ev.Type, ev.Object)
	}

	lists, watches := src.requests()
	if len(lists) != 1 || lists[0].Limit != 500 || lists[0].ResourceVersion != "" || lists[0].LabelSelector != "app=shop" || lists[0].FieldSelector != "scoped" {
		t.Errorf("lists %+v, want one page of 500 from the latest version, scoped once", lists)
	}
	if len(watches) != 1 || watches[0].ResourceVersion != "9" || watches[0].FieldSelector != "scoped" {
		t.Errorf("watches %+v, want one from 9, scoped once", watches)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.paths) != 1 || r.paths[0] != ListPathPaged || r.started != 1 || len(r.failures) != 0 {
		t.Errorf("reported lists %v, %d watches started and failures %v; want one paged list, one watch, no failure", r.paths, r.started, r.failures)
	}
}

// A streaming list leaves its stream, after the initial events, for the
// watch from its resourceVersion: the watch opens no second request.
func TestStreamingListHandsItsStreamToTheWatch(t *testing.T) {
	fw := watch.NewFakeWithChanSize(4, false)
	fw.Add(testPod("a", "7"))
	fw.Add(testPod("b", "8"))
	fw.Action(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
	src := &fakeSource{watches: []*watch.FakeWatcher{fw}}
	r := &loopReporter{}
	lw := testListWatch(src, StreamingOn, r)

	got, err := lw.ListWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if l := got.(*objectList); l.ResourceVersion != "9" || len(l.Items) != 2 {
		t.Fatalf("list at %q with %d items, want 9 and 2", l.ResourceVersion, len(l.Items))
	}
	w, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "9", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	fw.Delete(testPod("a", "10"))
	if ev := next(t, w); ev.Type != watch.Deleted || ev.Object.(*corev1.Pod).ResourceVersion != "10" {
		t.Errorf("event %s %#v, want the DELETED of a at 10", ev.Type, ev.Object)
	}

	lists, watches := src.requests()
	if len(lists) != 0 || len(watches) != 1 {
		t.Fatalf("%d lists and %d watches, want the streaming list's watch alone", len(lists), len(watches))
	}
	if o := watches[0]; o.SendInitialEvents == nil || !*o.SendInitialEvents || o.ResourceVersion != "" || o.FieldSelector != "scoped" {
		t.Errorf("streaming list %+v, want sendInitialEvents from the latest version, scoped once", o)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.paths) != 1 || r.paths[0] != ListPathStreaming || r.started != 1 {
		t.Errorf("reported lists %v and %d watches started, want one streaming list and one watch", r.paths, r.started)
	}
}
