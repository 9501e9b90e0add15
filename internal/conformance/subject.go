package conformance

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
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
	// Encoded keeps leanstore's objects in its encoded store
	// (WithEncodedStore): the informer is client-go's carried over around a
	// store that decodes on every read.
	Encoded bool
	// SharedReads makes the encoded store hand out its hot objects
	// themselves (EncodedStore.SharedReads).
	SharedReads bool
}

func (f Flavor) String() string {
	s := f.Library + "/" + f.Kind + "/stream-" + f.Streaming
	if f.Sharing {
		s += "/share"
	}
	if f.SlowIndex {
		s += "/slow-index"
	}
	if f.Encoded {
		s += "/encoded"
	}
	if f.SharedReads {
		s += "/shared-reads"
	}
	return s
}

// Oracle reports whether f is plain client-go.
func (f Flavor) Oracle() bool { return f.Library == "client-go" }

// DefaultFlavors are the informers a run compares: client-go's typed
// informer, streaming and not, one with a slow consumer, and its dynamic and
// metadata-only informers, streaming and not (the oracles of leanstore's
// other two factories: those that list with LIST outlive a server without the
// initial-events-end bookmark); leanstore's three factories, streaming lists
// on their default (auto) and off, sharing on and off, slow consumers, and
// each factory's informers over the encoded store (one with shared reads).
func DefaultFlavors() []Flavor {
	return []Flavor{
		{Library: "client-go", Kind: "typed", Streaming: "on"},
		{Library: "client-go", Kind: "typed", Streaming: "off"},
		{Library: "client-go", Kind: "typed", Streaming: "on", SlowIndex: true},
		{Library: "client-go", Kind: "dynamic", Streaming: "on"},
		{Library: "client-go", Kind: "dynamic", Streaming: "off"},
		{Library: "client-go", Kind: "metadata", Streaming: "on"},
		{Library: "client-go", Kind: "metadata", Streaming: "off"},
		{Library: "leanstore", Kind: "typed", Streaming: "auto"},
		{Library: "leanstore", Kind: "typed", Streaming: "off"},
		{Library: "leanstore", Kind: "typed", Streaming: "auto", SlowIndex: true},
		{Library: "leanstore", Kind: "typed", Streaming: "auto", Sharing: true},
		{Library: "leanstore", Kind: "typed", Streaming: "off", Sharing: true, SlowIndex: true},
		{Library: "leanstore", Kind: "dynamic", Streaming: "auto"},
		{Library: "leanstore", Kind: "dynamic", Streaming: "off", SlowIndex: true},
		{Library: "leanstore", Kind: "dynamic", Streaming: "auto", Sharing: true},
		{Library: "leanstore", Kind: "metadata", Streaming: "auto", SlowIndex: true},
		{Library: "leanstore", Kind: "metadata", Streaming: "off", Sharing: true},
		{Library: "leanstore", Kind: "typed", Streaming: "auto", Encoded: true},
		{Library: "leanstore", Kind: "typed", Streaming: "off", SlowIndex: true, Encoded: true, SharedReads: true},
		{Library: "leanstore", Kind: "dynamic", Streaming: "auto", Encoded: true},
		{Library: "leanstore", Kind: "metadata", Streaming: "off", Encoded: true},
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
// quiet run sees no event for that long and restarts from its last
// resourceVersion, which would deliver again an event the informer lost, and
// after two such stalls in a row the informer lists again, which would heal
// a stale cache: leanstore's time to truth is bounded well below it (see
// Bounds).
var IdleTimeout = 15 * time.Second

// subject is one informer under test, with what its handlers were told.
type subject struct {
	flavor Flavor
	// agent is the User-Agent of its requests: the proxy counts them by it.
	agent  string
	inf    cache.SharedIndexInformer
	run    func(ctx context.Context)
	status func() []leanstore.Status // leanstore's; nil for client-go
	rec    *recorder
	rv     *rvMonitor
	// impaired says why the subject cannot be expected to converge any more
	// (client-go after a fault it does not recover from); "" when it can.
	impaired string
	// impairedAt is the phase (see Run) in which it was impaired.
	impairedAt int
	// contentFailed is set once a content check failed: later ones are
	// reported in a line.
	contentFailed bool
}

// newSubject builds the informer of flavor f on cfg, over the pods that match
// selector in every namespace; its handlers record into a recorder that
// stamps each event with the phase.
func newSubject(f Flavor, cfg *rest.Config, selector string, phase *atomic.Int32) (*subject, error) {
	s := &subject{flavor: f, agent: "cachetune-conformance/" + f.String(), rec: newObjectRecorder(phase), rv: &rvMonitor{}}
	s.rec.ordered = !f.Oracle()
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = s.agent
	indexers := indexersOf(f)
	var err error
	switch f.Library {
	case "client-go":
		s.inf, s.run, err = clientGoInformer(f, cfg, selector, indexers)
	case "leanstore":
		s.inf, s.run, s.status, err = leanstoreInformer(f, cfg, selector, indexers)
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

// clientGoInformer is an oracle: client-go's own Pod informer of f's kind,
// built as its informer factories build it (typed, dynamicinformer,
// metadatainformer), on the pods that match selector.
//
// With streaming lists on, the dynamic and metadata-only informers are the
// ones dynamicinformer and metadatainformer build; with them off (which those
// packages cannot do but by the process-wide feature gate) they are built
// here the same way, with a ListerWatcher that refuses streaming lists.
func clientGoInformer(f Flavor, cfg *rest.Config, selector string, indexers cache.Indexers) (cache.SharedIndexInformer, func(context.Context), error) {
	c, err := newClients(cfg)
	if err != nil {
		return nil, nil, err
	}
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = selector }
	if f.Streaming == "on" {
		var inf cache.SharedIndexInformer
		switch f.Kind {
		case kindDynamic:
			inf = dynamicinformer.NewFilteredDynamicInformer(c.dynamic, podsGVR, "", 0, indexers, tweak).Informer()
		case kindMetadata:
			inf = metadatainformer.NewFilteredMetadataInformer(c.metadata, podsGVR, "", 0, indexers, tweak).Informer()
		}
		if inf != nil {
			return inf, inf.RunWithContext, nil
		}
	}
	list, watchFn := c.listWatch(f.Kind)
	var example kruntime.Object = &corev1.Pod{}
	switch f.Kind {
	case kindTyped:
	case kindDynamic:
		example = &unstructured.Unstructured{}
	case kindMetadata:
		example = &metav1.PartialObjectMetadata{}
	default:
		return nil, nil, fmt.Errorf("client-go flavor %s: unknown kind", f)
	}
	var lw cache.ListerWatcher = &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) {
			o.LabelSelector = selector
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return watchFn(ctx, o)
		},
	}
	if f.Streaming == "off" {
		lw = noStreamingLists{lw}
	}
	inf := cache.NewSharedIndexInformerWithOptions(lw, example, cache.SharedIndexInformerOptions{Indexers: indexers, ObjectDescription: f.String()})
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
	if f.Encoded {
		opts = append(opts, leanstore.WithEncodedStore(leanstore.EncodedStore{SharedReads: f.SharedReads}))
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
