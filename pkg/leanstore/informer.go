package leanstore

import (
	"context"
	"errors"
	"reflect"
	"runtime/pprof"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/encstore"
	"github.com/cachetune/cachetune/internal/reflector"
	"github.com/cachetune/cachetune/internal/shardfilter"
	"github.com/cachetune/cachetune/internal/shrink"
	"github.com/cachetune/cachetune/internal/status"
	"github.com/cachetune/cachetune/pkg/failure"
)

// Informer is a client-go SharedIndexInformer whose list and watch go through
// leanstore. Everything a controller uses (listers, handlers, indexers, HasSynced)
// behaves as in client-go; SetTransform and SetWatchErrorHandler are routed to
// leanstore so that the transform runs once per decoded object and the handler
// hears of every failure.
type Informer struct {
	cache.SharedIndexInformer
	name     string
	resource schema.GroupResource
	lw       *reflector.ListWatch // nil for a client-go fallback informer
	// shard is the informer's side of WithShard; nil without it (and for a
	// client-go fallback informer).
	shard *shardfilter.Filter
	// handed is what the informer's reflector has been handed (lw's).
	handed *reflector.Handed
	// strip is the informer's shrink pipeline, with the canonical values of
	// its objects; SetTransform adds the caller's transform to it.
	strip    *shrink.Pipeline
	reporter *status.Reporter
	// invalid is the factory's first invalid option: such an informer never
	// runs, so that it cannot sync with settings it was not given.
	invalid error
	// deliveryTick is called by the handlers' wrappers for each add of the
	// initial list (pacedHandler); nil when handlers are not wrapped (no
	// heap bound, an encoded store, a client-go fallback informer).
	deliveryTick func()

	mu      sync.Mutex
	started bool
}

var _ cache.SharedIndexInformer = (*Informer)(nil)

// informerConfig is what newInformer needs beyond the factory's options.
type informerConfig struct {
	name     string
	src      reflector.Source
	gr       func() schema.GroupResource
	example  runtime.Object
	indexers cache.Indexers
	resync   time.Duration
	wire     string
	// lean enables the lean protobuf decoder; src must then be a
	// reflector.RawSource.
	lean bool
	// client is the client src lists with, asked whether it serves streaming
	// lists (see effectiveStreaming).
	client any
}

func newInformer(cfg informerConfig, o *options, state *reflector.StreamingState, m *status.Counters) *Informer {
	invalid := o.err
	var enc *EncodedStore
	if invalid == nil {
		enc = o.encoded.forResource(cfg.gr())
	}
	sc := o.strip
	if enc != nil {
		// An encoded store keeps bytes: interning and sharing would only
		// build values that are encoded and dropped.
		sc.Intern, sc.Share = false, false
	}
	strip := shrink.NewPipeline(sc) // the informer's own: SetTransform changes only this informer
	tr := status.NewReporter(cfg.name, cfg.gr().String(), cfg.wire, o.logger, m)
	handed := reflector.NewHanded()
	lc := reflector.Config{
		Resource: cfg.gr, Example: cfg.example, Source: cfg.src, ListOptions: o.listOptions,
		PageSize: o.pageSize, IdleTimeout: o.idleTimeout, HeapBound: o.heapBound,
		Refusals: state, Strip: strip, Handed: handed,
		Backoff: o.backoff, Reporter: tr, Logger: tr.Logger(),
	}
	shard := shardfilter.New(o.shard)
	if shard != nil {
		lc.Shard = shard // never a nil *shardfilter.Filter: Config.Shard nil keeps every object
		handed.MovedOut = func(obj runtime.Object) bool { return !shard.Owns(obj) }
	}
	mode, why := effectiveStreaming(o.streaming, cfg.client)
	lc.Streaming, lc.StreamingWhy = loopStreaming(mode), why
	if cfg.lean {
		lc.Raw = cfg.src.(reflector.RawSource)
	}
	handed.Compact = enc != nil // an encoded store's handed set keeps records (reflector.Record)
	lw := reflector.New(lc)
	indexers := cfg.indexers
	if enc == nil {
		indexers = pacedIndexers(cfg.indexers, lw.Indexed)
	}
	sio := cache.SharedIndexInformerOptions{
		ResyncPeriod:      cfg.resync,
		Indexers:          indexers,
		ObjectDescription: cfg.name,
	}
	var inner cache.SharedIndexInformer
	if enc != nil {
		var err error
		if inner, err = encodedInformer(lw, handed, cfg.example, sio, enc); err != nil {
			invalid = err
		}
	}
	if inner == nil {
		inner = cache.NewSharedIndexInformerWithOptions(lw, cfg.example, sio)
	}
	lw.GuardHandOver(inner.HasSynced)
	tr.SetReflector(standInReflector(lw, cfg.example, cfg.name))
	inf := &Informer{SharedIndexInformer: inner, name: cfg.name, resource: cfg.gr(), lw: lw, shard: shard, handed: handed,
		strip: strip, reporter: tr, invalid: invalid}
	if enc == nil && o.heapBound > 0 {
		// An encoded store's informer collects as it decodes the list's
		// objects for its handlers (Unpacked).
		inf.deliveryTick = lw.Delivered
	}
	if handed.Compact {
		handed.Placeholder = func(r *reflector.Record) runtime.Object { return placeholder(r, cfg.example) }
	}
	_ = inner.SetWatchErrorHandlerWithContext(inf.reflectorError)
	return inf
}

// pacedIndexers returns indexers whose functions call tick (ListWatch.Indexed)
// before computing their index values. client-go's indexer calls them for
// every object it stores, on the goroutine that takes a list in: the hand-over
// of a first list allocates there (the FIFO's deltas, the store's keys and
// index entries, the handlers' notifications), and the tick lets the heap
// bound collect from that goroutine, where its own goroutine waits for a CPU
// (docs/memory.md, "The start-up peak of small caches"). The names and the
// values are the same; indexers added later (AddIndexers) are not wrapped,
// and one index function is enough.
func pacedIndexers(indexers cache.Indexers, tick func()) cache.Indexers {
	if len(indexers) == 0 {
		return indexers
	}
	paced := make(cache.Indexers, len(indexers))
	ticked := false
	for name, f := range indexers {
		if ticked {
			paced[name] = f
			continue
		}
		ticked = true
		paced[name] = func(obj any) ([]string, error) {
			tick()
			return f(obj)
		}
	}
	return paced
}

// placeholder is an object of example's type with r's metadata: the object
// of a DELETED a re-list sends for r under an encoded store (see
// reflector.Handed.recordGoneAt).
func placeholder(r *reflector.Record, example runtime.Object) runtime.Object {
	obj := newLike(example)
	if m, err := meta.Accessor(obj); err == nil {
		m.SetNamespace(r.Namespace)
		m.SetName(r.Name)
		m.SetUID(types.UID(r.UID))
		m.SetResourceVersion(r.ResourceVersion)
	}
	return obj
}

// standInReflector is the *cache.Reflector that leanstore gives the informer's
// watch-error handlers with the failures it reports itself. client-go's
// informer does not expose its own reflector, and handlers written for
// client-go pass it on (to cache.DefaultWatchErrorHandler, which logs its name
// and type): the stand-in has the informer's name and type, and is never run.
func standInReflector(lw cache.ListerWatcher, example runtime.Object, name string) *cache.Reflector {
	return cache.NewReflectorWithOptions(lw, example, cache.NewStore(cache.MetaNamespaceKeyFunc), cache.ReflectorOptions{Name: name})
}

// wrapClientGo wraps an informer built by client-go (used when the client offers
// no REST client to list with, e.g. a fake clientset): leanstore strips objects
// through client-go's transform, and nothing else changes.
func wrapClientGo(inner cache.SharedIndexInformer, example runtime.Object, name string, gr schema.GroupResource, why string, o *options, m *status.Counters) *Informer {
	if o.shard != nil {
		// Sharding (internal/shardfilter) filters inside leanstore's list and watch, which
		// this informer does not have: it fails rather than hold every object.
		why = shardedClientGo(gr, why).Error()
		inner = failingInformer(example, errors.New(why), o.resync)
	}
	strip := shrink.NewPipeline(o.strip) // the informer's own: SetTransform changes only this informer
	_ = inner.SetTransform(func(obj any) (any, error) { return strip.Apply(obj, gr) })
	tr := status.NewReporter(name, gr.String(), "client-go", o.logger, m)
	tr.SetListPath(ListPathClientGo, why)
	tr.SetReflector(standInReflector(&cache.ListWatch{}, example, name))
	inf := &Informer{SharedIndexInformer: inner, name: name, resource: gr, strip: strip, reporter: tr, invalid: o.err}
	_ = inner.SetWatchErrorHandlerWithContext(inf.reflectorError)
	return inf
}

// reflectorError receives the errors client-go's reflector reports itself: those
// leanstore has not reported already.
func (i *Informer) reflectorError(ctx context.Context, r *cache.Reflector, err error) {
	if err == nil || isReported(err) || errors.Is(err, context.Canceled) {
		return
	}
	i.reporter.FailFrom(ctx, failedAttempt{Reason: failure.WatchFailed, Err: err}, r)
}

// Name is the informer's name in logs, metrics and profiles: factory/resource.
func (i *Informer) Name() string { return i.name }

// Resource is the group and resource the informer caches.
func (i *Informer) Resource() schema.GroupResource { return i.resource }

// Status reports the informer's list path, last list and failures.
func (i *Informer) Status() Status {
	s := i.reporter.Status()
	s.Synced = i.HasSynced()
	if i.invalid != nil {
		s.LastError = i.invalid.Error()
	}
	s.Shard = i.shard.Status()
	if st, ok := i.encodedStats(); ok {
		s.Encoded = encodedStatus(st)
	}
	return s
}

// Run runs the informer until stopCh is closed.
func (i *Informer) Run(stopCh <-chan struct{}) {
	i.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext runs the informer until ctx ends. Its goroutines carry the pprof
// labels informer and resource, so CPU and goroutine profiles split per informer.
// An informer of a factory given an invalid option logs the option's error and
// waits for ctx without listing: it never syncs, and Status and the factory's
// Check report the error (client-go's Run signature has no error to return).
func (i *Informer) RunWithContext(ctx context.Context) {
	i.mu.Lock()
	i.started = true
	i.mu.Unlock()
	if i.invalid != nil {
		i.reporter.Logger().Error(i.invalid, "informer not started: invalid option", "informer", i.name)
		<-ctx.Done()
		return
	}
	pprof.Do(ctx, pprof.Labels("informer", i.name, "resource", i.resource.String()), func(ctx context.Context) {
		guarded := i.runGuard(ctx)
		i.SharedIndexInformer.RunWithContext(ctx)
		guarded()
	})
}

// CheckMutations hashes every value the informer's cached objects share and
// returns a *MutationError for each that changed in place since it was shared
// (joined with errors.Join), naming the object and the field path. It returns
// nil when nothing changed, and when the guard is off (WithMutationGuard).
// What it finds for the first time is also logged and counted, as the
// periodic check does.
func (i *Informer) CheckMutations() error {
	if !i.strip.Guarded() {
		return nil
	}
	all, fresh := i.strip.Mutations()
	for _, e := range all {
		e.Informer = i.name
	}
	i.reporter.Mutated(fresh)
	return shrink.JoinMutations(all)
}

// runGuard checks the shared values every guardInterval until ctx ends, when
// the informer has a guard, and returns a function that waits for the check's
// goroutine to end.
func (i *Informer) runGuard(ctx context.Context) (wait func()) {
	if !i.strip.Guarded() {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(guardInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = i.CheckMutations()
			}
		}
	}()
	return func() { <-done }
}

// encodedStats returns the encoded store's statistics, and false when the
// informer keeps its objects decoded.
func (i *Informer) encodedStats() (encstore.Stats, bool) {
	s, ok := i.GetIndexer().(*encstore.Store)
	if !ok {
		return encstore.Stats{}, false
	}
	return s.Stats(), true
}

// SetTransform adds the caller's transform after leanstore's stripping, on
// every path (also when the informer is client-go's own, see ListPathClientGo).
// As in client-go, it fails once the informer has started.
func (i *Informer) SetTransform(handler cache.TransformFunc) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started {
		return errors.New("leanstore: informer has already started")
	}
	i.strip.Transform = handler
	return nil
}

// SetWatchErrorHandler registers a handler called for every list or watch failure
// of this informer, with a *failure.Error (see package failure to classify it). Unlike client-go, which keeps one handler
// and never calls it for many failures (a 410 on a streaming list, a stalled or
// malformed watch), leanstore calls every registered handler for each failure.
func (i *Informer) SetWatchErrorHandler(handler cache.WatchErrorHandler) error {
	return i.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) { handler(r, err) })
}

// SetWatchErrorHandlerWithContext is SetWatchErrorHandler with a context.
func (i *Informer) SetWatchErrorHandlerWithContext(handler cache.WatchErrorHandlerWithContext) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started {
		return errors.New("leanstore: informer has already started")
	}
	i.reporter.AddHandler(handler)
	return nil
}

// Unwrap returns the leanstore Informer behind inf, or nil when inf is not one.
// client-go's generated accessors wrap informers in a typed view
// (factory.Core().V1().Pods().Informer() is a cache.TypedSharedIndexInformer);
// Unwrap looks through it:
//
//	st := leanstore.Unwrap(factory.Core().V1().Pods().Informer()).Status()
func Unwrap(inf cache.SharedIndexInformer) *Informer {
	for range 4 { // a wrapper of a wrapper at most, in practice
		if li, ok := inf.(*Informer); ok {
			return li
		}
		v := reflect.ValueOf(inf)
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return nil
		}
		f := v.FieldByName("SharedIndexInformer")
		if !f.IsValid() || !f.CanInterface() {
			return nil
		}
		next, ok := f.Interface().(cache.SharedIndexInformer)
		if !ok {
			return nil
		}
		inf = next
	}
	return nil
}
