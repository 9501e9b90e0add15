package conformance

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/leanstore"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// Flavor names the informers a run compares.
type Flavor struct {
	// Library is "client-go" (the oracle) or "leanstore".
	Library string
	// Kind is "typed", "dynamic" or "metadata".
	Kind string
	// Streaming is "auto", "on", "off" for leanstore; "on" or "off" for
	// client-go (off forces LIST, as a client without streaming lists does).
	Streaming string
	// Sharing turns on leanstore's sharing of equal parts.
	Sharing bool
	// SlowIndex adds an index function that takes SlowIndexDelay per object,
	// so that events stay queued in the informer's FIFO.
	SlowIndex bool
}

func (f Flavor) String() string {
	s := f.Library + "/" + f.Kind + "/stream-" + f.Streaming
	if f.Sharing {
		s += "/share"
	}
	if f.SlowIndex {
		s += "/slow-index"
	}
	return s
}

// Oracle reports whether f is plain client-go.
func (f Flavor) Oracle() bool { return f.Library == "client-go" }

// DefaultFlavors are the informers a run compares: client-go, streaming and
// not, one with a slow consumer; leanstore's three factories, streaming lists
// on their default (auto) and off, sharing on and off, slow consumers.
func DefaultFlavors() []Flavor {
	return []Flavor{
		{Library: "client-go", Kind: "typed", Streaming: "on"},
		{Library: "client-go", Kind: "typed", Streaming: "off"},
		{Library: "client-go", Kind: "typed", Streaming: "on", SlowIndex: true},
		{Library: "leanstore", Kind: "typed", Streaming: "auto"},
		{Library: "leanstore", Kind: "typed", Streaming: "off"},
		{Library: "leanstore", Kind: "typed", Streaming: "auto", SlowIndex: true},
		{Library: "leanstore", Kind: "typed", Streaming: "auto", Sharing: true},
		{Library: "leanstore", Kind: "typed", Streaming: "off", Sharing: true, SlowIndex: true},
		{Library: "leanstore", Kind: "dynamic", Streaming: "auto"},
		{Library: "leanstore", Kind: "dynamic", Streaming: "off", SlowIndex: true},
		{Library: "leanstore", Kind: "metadata", Streaming: "auto", SlowIndex: true},
		{Library: "leanstore", Kind: "metadata", Streaming: "off", Sharing: true},
	}
}

// SlowIndexDelay is how long the slow index function takes per object, and
// GhostIndexDelay how long during a ghost step's burst (see ghost), when events
// must stay queued until the re-list has compared.
var (
	SlowIndexDelay  = 5 * time.Millisecond
	GhostIndexDelay = 10 * time.Millisecond
)

// indexDelay is the slow index function's current delay, in nanoseconds.
var indexDelay atomic.Int64

func init() { indexDelay.Store(int64(SlowIndexDelay)) }

// IdleTimeout is the leanstore informers' watch idle time-out. A watch of a
// quiet run sees no event for that long and restarts, and after two such
// stalls in a row the informer lists again, which would heal a stale cache:
// leanstore must converge well before twice this time (see Config.StepTimeout).
var IdleTimeout = 10 * time.Second

// subject is one informer under test, with what its handlers were told.
type subject struct {
	flavor Flavor
	inf    cache.SharedIndexInformer
	run    func(ctx context.Context)
	rec    *recorder
	rv     *rvMonitor
	// impaired says why the subject cannot be expected to converge any more
	// (client-go after a fault it does not recover from); "" when it can.
	impaired string
}

// newSubject builds the informer of flavor f on cfg, over the pods that match
// selector in every namespace.
func newSubject(f Flavor, cfg *rest.Config, selector string) (*subject, error) {
	s := &subject{flavor: f, rec: newRecorder(), rv: &rvMonitor{}}
	indexers := indexersOf(f)
	var err error
	switch f.Library {
	case "client-go":
		s.inf, s.run, err = clientGoInformer(f, cfg, selector, indexers)
	case "leanstore":
		s.inf, s.run, _, err = leanstoreInformer(f, cfg, selector, indexers)
	default:
		err = fmt.Errorf("flavor %s: unknown library", f)
	}
	if err != nil {
		return nil, err
	}
	if _, err := s.inf.AddEventHandler(s.rec.handler()); err != nil {
		return nil, err
	}
	return s, nil
}

// indexersOf is the indexers of flavor f: a slow one for SlowIndex.
func indexersOf(f Flavor) cache.Indexers {
	indexers := cache.Indexers{}
	if f.SlowIndex {
		indexers["slow"] = func(obj interface{}) ([]string, error) {
			time.Sleep(time.Duration(indexDelay.Load()))
			return []string{"all"}, nil
		}
	}
	return indexers
}

// clientGoInformer is the oracle: client-go's own typed Pod informer.
func clientGoInformer(f Flavor, cfg *rest.Config, selector string, indexers cache.Indexers) (cache.SharedIndexInformer, func(context.Context), error) {
	if f.Kind != "typed" {
		return nil, nil, fmt.Errorf("client-go flavor %s: only typed", f)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	var lw cache.ListerWatcher = &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) {
			o.LabelSelector = selector
			return cs.CoreV1().Pods("").List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return cs.CoreV1().Pods("").Watch(ctx, o)
		},
	}
	if f.Streaming == "off" {
		lw = noStreamingLists{lw}
	}
	inf := cache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{}, cache.SharedIndexInformerOptions{Indexers: indexers, ObjectDescription: f.String()})
	return inf, inf.RunWithContext, nil
}

// leanstoreOptions are the factory options of a leanstore flavor.
func leanstoreOptions(f Flavor, selector string) []leanstore.Option {
	opts := []leanstore.Option{
		leanstore.WithLabelSelector(selector),
		leanstore.WithName(f.String()),
		leanstore.WithWatchIdleTimeout(IdleTimeout),
		leanstore.WithBackoff(leanstore.Backoff{Initial: 200 * time.Millisecond, Factor: 2, Cap: 2 * time.Second, Jitter: 0.5, ResetAfter: time.Minute}),
		leanstore.WithStripLastApplied(),
	}
	switch f.Streaming {
	case "auto":
		opts = append(opts, leanstore.WithStreamingLists(leanstore.StreamingAuto))
	case "on":
		opts = append(opts, leanstore.WithStreamingLists(leanstore.StreamingOn))
	case "off":
		opts = append(opts, leanstore.WithStreamingLists(leanstore.StreamingOff))
	}
	if f.Sharing {
		opts = append(opts, leanstore.WithSharing(true))
	}
	return opts
}

// leanstoreInformer is the Pod informer of a leanstore factory of f's kind,
// with f's options and then extra; running it starts the factory and, when
// ctx ends, shuts it down. status is the factory's Status.
func leanstoreInformer(f Flavor, cfg *rest.Config, selector string, indexers cache.Indexers, extra ...leanstore.Option) (inf cache.SharedIndexInformer, run func(context.Context), status func() []leanstore.Status, err error) {
	opts := append(leanstoreOptions(f, selector), extra...)
	var start func(context.Context)
	var shutdown func()
	switch f.Kind {
	case "typed":
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, nil, nil, err
		}
		fac := leanstore.NewSharedInformerFactory(cs, 0, opts...)
		inf = fac.Core().V1().Pods().Informer()
		start, shutdown, status = fac.StartWithContext, fac.Shutdown, fac.Status
	case "dynamic":
		dc, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, nil, nil, err
		}
		fac := leanstore.NewDynamicSharedInformerFactory(dc, 0, opts...)
		inf = fac.ForResource(podsGVR).Informer()
		start, shutdown, status = fac.StartWithContext, fac.Shutdown, fac.Status
	case "metadata":
		mc, err := metadata.NewForConfig(cfg)
		if err != nil {
			return nil, nil, nil, err
		}
		fac := leanstore.NewMetadataSharedInformerFactory(mc, 0, opts...)
		inf = fac.ForResource(podsGVR).Informer()
		start, shutdown, status = fac.StartWithContext, fac.Shutdown, fac.Status
	default:
		return nil, nil, nil, fmt.Errorf("flavor %s: unknown kind", f)
	}
	if len(indexers) > 0 {
		if err := inf.AddIndexers(indexers); err != nil {
			return nil, nil, nil, err
		}
	}
	run = func(ctx context.Context) {
		start(ctx)
		<-ctx.Done()
		shutdown()
	}
	return inf, run, status, nil
}

// noStreamingLists makes client-go's reflector list with LIST, as it does for
// a client that cannot serve streaming lists.
type noStreamingLists struct{ cache.ListerWatcher }

func (noStreamingLists) IsWatchListSemanticsUnSupported() bool { return true }

// state is a store's content: key -> resourceVersion.
type state map[string]string

func storeState(inf cache.SharedIndexInformer) state {
	out := state{}
	for _, obj := range inf.GetStore().List() {
		m, err := metaOf(obj)
		if err != nil {
			continue
		}
		out[key(m.GetNamespace(), m.GetName())] = m.GetResourceVersion()
	}
	return out
}

func key(ns, name string) string { return ns + "/" + name }

// diff describes how got differs from want, in a few words and examples.
func (want state) diff(got state) string {
	var missing, extra, stale []string
	for k, rv := range want {
		switch g, ok := got[k]; {
		case !ok:
			missing = append(missing, k)
		case g != rv:
			stale = append(stale, fmt.Sprintf("%s at %s, not %s", k, g, rv))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra)+len(stale) == 0 {
		return ""
	}
	return fmt.Sprintf("%d missing %v, %d extra %v, %d stale %v", len(missing), first(missing), len(extra), first(extra), len(stale), first(stale))
}

func first(s []string) []string { return s[:min(len(s), 3)] }

// recorder is an event handler that applies every event to its own state and
// checks, per key, that resourceVersions never go backwards.
type recorder struct {
	mu         sync.Mutex
	state      state
	last       map[string]string // key -> newest resourceVersion seen
	events     int
	violations []string
}

func newRecorder() *recorder {
	return &recorder{state: state{}, last: map[string]string{}}
}

func (r *recorder) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { r.saw("add", obj, false) },
		UpdateFunc: func(_, obj interface{}) { r.saw("update", obj, false) },
		DeleteFunc: func(obj interface{}) { r.saw("delete", obj, true) },
	}
}

func (r *recorder) saw(what string, obj interface{}, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, err := metaOf(obj)
	if err != nil {
		r.mu.Lock()
		r.violations = append(r.violations, fmt.Sprintf("%s of %T without metadata", what, obj))
		r.mu.Unlock()
		return
	}
	r.sawKey(what, key(m.GetNamespace(), m.GetName()), m.GetResourceVersion(), deleted)
}

// sawKey records an event of the object at key k with resourceVersion rv.
func (r *recorder) sawKey(what, k, rv string, deleted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events++
	if prev, ok := r.last[k]; ok {
		if c, err := resourceversion.CompareResourceVersion(rv, prev); err == nil && c < 0 {
			r.violations = append(r.violations, fmt.Sprintf("%s of %s at resourceVersion %s after %s", what, k, rv, prev))
		}
	}
	r.last[k] = rv
	if deleted {
		delete(r.state, k)
	} else {
		r.state[k] = rv
	}
}

func (r *recorder) snapshot() (state, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := make(state, len(r.state))
	for k, v := range r.state {
		s[k] = v
	}
	return s, append([]string(nil), r.violations...)
}

// rvMonitor samples an informer's LastSyncResourceVersion and records every
// time it went backwards.
type rvMonitor struct {
	// excuse, when set, reports whether a dip is expected now: a sharded
	// informer's goes back while a rebalance hands it the objects that came
	// to it, which keep their own, older resourceVersions.
	excuse func() bool

	mu         sync.Mutex
	max        string
	samples    int
	below      bool // the last sample was below max: one dip, reported once
	dips       int
	excused    int
	violations []string
}

func (m *rvMonitor) run(ctx context.Context, inf cache.SharedIndexInformer) {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.sample(inf.LastSyncResourceVersion())
		}
	}
}

func (m *rvMonitor) sample(rv string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.samples++
	if rv == "" {
		return
	}
	if m.max != "" {
		if c, err := resourceversion.CompareResourceVersion(rv, m.max); err == nil && c < 0 {
			if !m.below && m.excuse != nil && m.excuse() {
				m.excused++
			} else if !m.below {
				m.dips++
				if len(m.violations) < 5 {
					m.violations = append(m.violations, fmt.Sprintf("LastSyncResourceVersion went back to %s after %s", rv, m.max))
				}
			}
			m.below = true
			return
		}
	}
	m.max, m.below = rv, false
}

func (m *rvMonitor) result() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := append([]string(nil), m.violations...)
	if m.dips > len(m.violations) {
		out = append(out, fmt.Sprintf("LastSyncResourceVersion went back %d times in all", m.dips))
	}
	return out
}

// excusedDips counts the dips that excuse excused.
func (m *rvMonitor) excusedDips() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.excused
}
