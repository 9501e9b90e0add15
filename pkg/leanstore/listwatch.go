package leanstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/failure"
)

// listWatch is the cache.ListerWatcher behind every leanstore informer.
//
// client-go's reflector decodes a whole LIST (or collects a whole streaming list)
// before its transform runs, and on a re-list it builds a full second copy of the
// store next to the first. listWatch does the list itself instead, object by
// object: each object is stripped as soon as it is decoded, a paged LIST releases
// each page before asking for the next, and an object whose uid and
// resourceVersion match the one already cached is replaced by the cached one at
// once, so a re-list of an unchanged store allocates almost nothing that lives.
//
// A watch that expires (410) lists again from inside the watch and sends the
// reflector only the differences from its store (see leanWatch.relist), so that
// client-go's Replace, with its second copy of the store's bookkeeping, runs only
// for the initial list and the rarer re-lists the reflector asks for itself.
//
// It tells the reflector that it does not support WatchList semantics, so the
// reflector always calls List: listWatch decides itself between a streaming list
// and a paged LIST, remembers when the server refuses streaming lists, retries
// failed lists with its own backoff, and reports every failure.
type listWatch struct {
	src     source
	gr      func() schema.GroupResource
	opts    *options
	strip   *stripper
	state   *factoryState
	tracker *tracker
	backoff *backoffState
	// expiry paces re-lists after watches that expire (410) before delivering
	// anything; it resets when a watch delivers an event.
	expiry *backoffState

	// raw is src when it can hand out raw protobuf responses, which the lean
	// decoder reads (see protodecode.go); nil otherwise.
	raw rawSource

	// store is the informer's indexer, where unchanged objects are looked up.
	store cache.Store
	// example is an empty object of the informer's type, for bookmarks.
	example kruntime.Object

	// watchBroken is set when a watch ended in a failure: the next watch waits
	// out the backoff first, so that a fault repeating on every watch costs a
	// bounded number of requests.
	watchBroken atomic.Bool
	// stalls counts watches in a row that stalled before delivering anything:
	// when watches keep stalling while lists work (a proxy that black-holes
	// long requests), the informer lists again instead of watching in vain.
	stalls atomic.Int32

	mu     sync.Mutex
	synced bool
	// lastCount is the size of the last list, to size the next one's slice.
	lastCount int
	pending   *pendingWatch // the stream of the last streaming list, for the next Watch
}

// pendingWatch is a streaming list's watch after its initial events: the
// reflector's next Watch from that resourceVersion continues on it, as client-go
// itself does, instead of opening a second request.
type pendingWatch struct {
	w    watch.Interface
	rv   string
	lean bool
}

var (
	_ cache.ListerWatcher            = (*listWatch)(nil)
	_ cache.ListerWatcherWithContext = (*listWatch)(nil)
)

// IsWatchListSemanticsUnSupported tells client-go's reflector to call List rather
// than run its own streaming list: listWatch streams inside List.
func (lw *listWatch) IsWatchListSemanticsUnSupported() bool { return true }

// List implements cache.Lister; the reflector calls ListWithContext.
func (lw *listWatch) List(opts metav1.ListOptions) (kruntime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

// Watch implements cache.Watcher; the reflector calls WatchWithContext.
func (lw *listWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

// ListWithContext lists every object, retrying with backoff until it succeeds or
// ctx ends, and returns them in a *metav1.List whose items are the objects to
// store (unchanged ones are the cached objects themselves).
func (lw *listWatch) ListWithContext(ctx context.Context, reflectorOpts metav1.ListOptions) (kruntime.Object, error) {
	lw.dropPending()
	// "0" lets the API server answer from its watch cache in one piece, ignoring
	// any page size; "" is a consistent read that honours pages.
	rv := reflectorOpts.ResourceVersion
	if rv == "0" {
		rv = ""
	}
	res, err := lw.list(ctx, rv)
	if err != nil {
		return nil, err
	}
	return &objectList{ListMeta: metav1.ListMeta{ResourceVersion: res.rv}, Items: res.items}, nil
}

// list lists every object from rv ("" for the latest), by a streaming list or a
// paged LIST, retrying with backoff until it succeeds or ctx ends.
func (lw *listWatch) list(ctx context.Context, rv string) (listResult, error) {
	listFailure := Failure{Reason: failure.InitialListFailed, Relist: lw.isSynced()}
	streamFailure := listFailure
	streamFailure.Streaming = true
	pace := newPacer(lw.opts.heapBound).reportTo(lw.tracker)
	for {
		if err := lw.src.resolve(ctx); err != nil {
			if !lw.failed(ctx, listFailure, err) {
				return listResult{}, ctx.Err()
			}
			continue
		}
		if lw.useStreaming() {
			res, err := lw.streamingList(ctx, rv, pace)
			if err == nil {
				pace.finish()
				return lw.listed(res, ListPathStreaming, lw.state.streamingReason()), nil
			}
			if ctx.Err() != nil {
				return listResult{}, ctx.Err()
			}
			switch {
			case refusesStreaming(err):
				lw.state.refuse(lw.opts.streaming, err)
				// fall through to a paged LIST right away
			case errors.Is(err, errStalled):
				// Nothing came, not even the end of the initial events: list with
				// LIST this time rather than wait another idle period.
				lw.report(ctx, streamFailure, err, 0)
			case isExpired(err) && rv != "":
				lw.report(ctx, streamFailure, err, 0)
				rv = ""
				continue
			default:
				if !lw.failed(ctx, streamFailure, err) {
					return listResult{}, ctx.Err()
				}
				continue
			}
		}
		res, err := lw.pagedList(ctx, rv, pace)
		if err == nil {
			pace.finish()
			return lw.listed(res, ListPathPaged, lw.state.pagedReason(lw.opts.streaming)), nil
		}
		if ctx.Err() != nil {
			return listResult{}, ctx.Err()
		}
		if isExpired(err) && rv != "" {
			lw.report(ctx, listFailure, err, 0)
			rv = ""
			continue
		}
		if !lw.failed(ctx, listFailure, err) {
			return listResult{}, ctx.Err()
		}
	}
}

// failed reports a failure and waits out the backoff; false means ctx ended.
func (lw *listWatch) failed(ctx context.Context, f Failure, err error) bool {
	d := lw.backoff.delay()
	lw.report(ctx, f, err, d)
	return sleep(ctx, d)
}

// report reports a failure after which the informer retries after next.
func (lw *listWatch) report(ctx context.Context, f Failure, err error, next time.Duration) {
	f.Err, f.NextDelay = err, next
	lw.tracker.fail(ctx, f)
}

// listResult is a complete list, ready for the reflector.
type listResult struct {
	items  []kruntime.Object
	rv     string
	reused int
}

// listed records a successful list.
func (lw *listWatch) listed(res listResult, path ListPath, reason string) listResult {
	lw.backoff.reset()
	lw.tracker.ok()
	lw.tracker.listed(path, reason, len(res.items), res.reused)
	lw.mu.Lock()
	lw.synced = true
	lw.lastCount = len(res.items)
	lw.mu.Unlock()
	return res
}

// objectList is the list handed to the reflector: its items are the objects to
// store, by reference, so that nothing is copied on the way.
type objectList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []kruntime.Object
}

// DeepCopyObject copies the list, not its objects: cached objects are read-only.
func (l *objectList) DeepCopyObject() kruntime.Object {
	c := *l
	c.Items = append([]kruntime.Object(nil), l.Items...)
	return &c
}

// listSizeHint is the expected number of objects of the next list.
func (lw *listWatch) listSizeHint() int {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.lastCount
}

func (lw *listWatch) isSynced() bool {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.synced
}

func (lw *listWatch) useStreaming() bool {
	switch lw.opts.streaming {
	case StreamingOff:
		return false
	case StreamingAuto:
		return !lw.state.refused()
	}
	return true
}

// pagedList lists page by page. Each page's objects are stripped (or replaced by
// the unchanged cached object) and copied out of the page, so the page itself is
// garbage before the next one arrives.
func (lw *listWatch) pagedList(ctx context.Context, rv string, pace *pacer) (listResult, error) {
	var res listResult
	opts := metav1.ListOptions{Limit: lw.opts.pageSize, ResourceVersion: rv}
	if rv != "" {
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	page := lw.decodedPage
	if lw.raw != nil {
		page = lw.rawPage(lw.newDecoder())
	}
	for {
		part, cont, err := page(ctx, lw.opts.listOptions(opts), pace)
		if err != nil {
			if opts.Continue != "" && isExpired(err) {
				// The snapshot behind the continue token is gone: start over with
				// a fresh consistent list.
				return lw.pagedList(ctx, "", pace)
			}
			return res, err
		}
		if res.items == nil {
			res.items = make([]kruntime.Object, 0, max(lw.listSizeHint(), len(part.items)))
		}
		res.items = append(res.items, part.items...)
		res.reused += part.reused
		res.rv = part.rv
		if opts.Continue = cont; cont == "" {
			return res, nil
		}
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	}
}

// decodedPage lists one page with the client's own decoder.
func (lw *listWatch) decodedPage(ctx context.Context, opts metav1.ListOptions, pace *pacer) (res listResult, cont string, err error) {
	page, err := lw.src.list(ctx, opts)
	if err != nil {
		return res, "", err
	}
	lm, err := meta.ListAccessor(page)
	if err != nil {
		return res, "", fmt.Errorf("list %s: %w", lw.gr(), err)
	}
	err = meta.EachListItem(page, func(obj kruntime.Object) error {
		kept, reused, err := lw.keep(obj, true)
		if err != nil {
			return err
		}
		if reused {
			res.reused++
		}
		res.items = append(res.items, kept)
		pace.tick()
		return nil
	})
	res.rv = lm.GetResourceVersion()
	return res, lm.GetContinue(), err
}

// rawPage lists pages as protobuf and decodes them with the lean decoder as
// they arrive: a page is never held whole, decoded or encoded.
func (lw *listWatch) rawPage(d *protoDecoder) func(context.Context, metav1.ListOptions, *pacer) (listResult, string, error) {
	return func(ctx context.Context, opts metav1.ListOptions, pace *pacer) (listResult, string, error) {
		body, err := lw.raw.rawList(ctx, opts)
		if err != nil {
			return listResult{}, "", err
		}
		defer body.Close()
		return d.decodeListStream(body, lw.gr(), pace)
	}
}

func (lw *listWatch) newDecoder() *protoDecoder {
	return &protoDecoder{newObject: lw.raw.newObject, store: lw.store, strip: lw.strip}
}

// openWatch starts a watch: a lean protobuf stream when the source allows it.
// The result's objects are final (stripped, or the cached ones) when lean is true.
func (lw *listWatch) openWatch(ctx context.Context, opts metav1.ListOptions, onBroken func(error)) (w watch.Interface, d *protoDecoder, err error) {
	if lw.raw == nil {
		w, err = lw.src.watch(ctx, opts)
		return w, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	body, err := lw.raw.rawWatch(ctx, opts)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	d = lw.newDecoder()
	return newProtoWatch(body, cancel, d, lw.gr(), onBroken), d, nil
}

// streamingList runs a streaming list: a watch that first sends every object as
// an ADDED event, then a bookmark marking the end of the initial events.
func (lw *listWatch) streamingList(ctx context.Context, rv string, pace *pacer) (listResult, error) {
	timeout := int64((5 + rand.Float64()*5) * 60) // like client-go: 5 to 10 minutes
	send := true
	opts := lw.opts.listOptions(metav1.ListOptions{
		ResourceVersion:      rv,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    &send,
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       &timeout,
	})
	// A break while the initial events stream is this list's failure; after the
	// initial-events-end bookmark the stream carries on as the reflector's watch
	// (see pendingWatch), and a break is reported as a watch failure.
	var mu sync.Mutex
	var broken error
	listing := true
	onBroken := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if listing {
			broken = err
			return
		}
		lw.watchStreamBroke(ctx)(err)
	}
	w, d, err := lw.openWatch(ctx, opts, onBroken)
	if err != nil {
		return listResult{}, err
	}
	res := listResult{items: make([]kruntime.Object, 0, lw.listSizeHint())}
	// index finds items by key for MODIFIED and DELETED events, which a server
	// does not send before the end of the initial events: it is built only if one
	// comes.
	var index map[string]int
	indexed := func() map[string]int {
		if index == nil {
			index = make(map[string]int, len(res.items))
			for i, obj := range res.items {
				k, _ := cache.MetaNamespaceKeyFunc(obj)
				index[k] = i
			}
		}
		return index
	}
	var idle <-chan time.Time
	var timer *time.Timer
	if lw.opts.idleTimeout > 0 {
		timer = time.NewTimer(lw.opts.idleTimeout)
		defer timer.Stop()
		idle = timer.C
	}
	for {
		select {
		case <-ctx.Done():
			w.Stop()
			return res, ctx.Err()
		case <-idle:
			w.Stop()
			return res, stalled(lw.opts.idleTimeout)
		case ev, ok := <-w.ResultChan():
			if !ok {
				mu.Lock()
				defer mu.Unlock()
				if broken != nil {
					return res, broken
				}
				return res, fmt.Errorf("streaming list of %s ended after %d objects, before the end of its initial events", lw.gr(), len(res.items))
			}
			if timer != nil {
				timer.Reset(lw.opts.idleTimeout)
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				kept, reused := ev.Object, false
				if d == nil { // objects from the lean decoder are final already
					var err error
					if kept, reused, err = lw.keep(ev.Object, false); err != nil {
						w.Stop()
						return res, err
					}
				}
				if ev.Type == watch.Modified || index != nil {
					key, _ := cache.MetaNamespaceKeyFunc(kept)
					if i, ok := indexed()[key]; ok {
						res.items[i] = kept
						break
					}
					index[key] = len(res.items)
				}
				res.items = append(res.items, kept)
				if reused {
					res.reused++
				}
				pace.tick()
			case watch.Deleted:
				key, _ := cache.MetaNamespaceKeyFunc(ev.Object)
				if i, ok := indexed()[key]; ok {
					last := len(res.items) - 1
					res.items[i] = res.items[last]
					k2, _ := cache.MetaNamespaceKeyFunc(res.items[i])
					index[k2] = i
					res.items = res.items[:last]
					delete(index, key)
				}
			case watch.Bookmark:
				m, err := meta.Accessor(ev.Object)
				if err != nil {
					w.Stop()
					return res, fmt.Errorf("streaming list of %s: bookmark: %w", lw.gr(), err)
				}
				if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
					// A server that serves streaming lists sends no other bookmark
					// before the end of the initial events: this one ignored
					// sendInitialEvents (an API server older than 1.27).
					w.Stop()
					return res, errStreamingIgnored
				}
				res.rv = m.GetResourceVersion()
				if d != nil {
					res.reused = d.reused
				}
				mu.Lock()
				listing = false
				mu.Unlock()
				lw.mu.Lock()
				lw.pending = &pendingWatch{w: w, rv: res.rv, lean: d != nil}
				lw.mu.Unlock()
				return res, nil
			case watch.Error:
				w.Stop()
				return res, apierrors.FromObject(ev.Object)
			}
		}
	}
}

// keep returns the object to store for obj: the cached object when it has the
// same uid and resourceVersion, otherwise obj stripped. copyOut makes a private
// copy of obj first when it lives inside a list's item array, so that the array
// can be freed.
func (lw *listWatch) keep(obj kruntime.Object, copyOut bool) (kruntime.Object, bool, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %T has no metadata: %w", lw.gr(), obj, err)
	}
	if lw.store != nil {
		key := m.GetName()
		if ns := m.GetNamespace(); ns != "" {
			key = ns + "/" + key
		}
		if old, ok, _ := lw.store.GetByKey(key); ok {
			if om, err := meta.Accessor(old); err == nil && om.GetUID() == m.GetUID() && om.GetResourceVersion() == m.GetResourceVersion() {
				if o, ok := old.(kruntime.Object); ok {
					return o, true, nil
				}
			}
		}
	}
	if copyOut {
		obj = shallowCopy(obj)
	}
	out, err := lw.strip.apply(obj, lw.gr())
	if err != nil {
		return nil, false, err
	}
	o, ok := out.(kruntime.Object)
	if !ok {
		return nil, false, fmt.Errorf("%s: transform returned %T, not a runtime.Object", lw.gr(), out)
	}
	return o, false, nil
}

// shallowCopy moves a list item into its own allocation. It shares every field
// with the original, which is fine: the list is dropped right after.
func shallowCopy(obj kruntime.Object) kruntime.Object {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer {
		return obj
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	return c.Interface().(kruntime.Object)
}

// WatchWithContext opens a watch, retrying with backoff until it succeeds, ctx
// ends, or the server says the resourceVersion is too old (then the reflector
// must list again). The returned watch strips objects, reports errors and ends
// itself when it has been silent for longer than the idle timeout.
func (lw *listWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if p := lw.takePending(opts.ResourceVersion); p != nil {
		lw.tracker.watchStarted()
		return newLeanWatch(ctx, lw, p.w, p.lean, opts), nil
	}
	if lw.watchBroken.Swap(false) && !sleep(ctx, lw.backoff.delay()) {
		return nil, ctx.Err()
	}
	if lw.stalls.Load() >= maxStalls {
		lw.stalls.Store(0)
		lw.tracker.logger.Info("watches keep stalling: listing again", "stalls", maxStalls)
		return nil, reportedError{apierrors.NewResourceExpired("watches stalled; listing again")}
	}
	for {
		w, d, err := lw.openWatch(ctx, lw.opts.listOptions(opts), lw.watchStreamBroke(ctx))
		if err == nil {
			lw.tracker.watchStarted()
			return newLeanWatch(ctx, lw, w, d != nil, opts), nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		start := Failure{Reason: failure.WatchStartFailed}
		if isExpired(err) {
			lw.report(ctx, start, err, 0)
			return nil, reportedError{err}
		}
		if !lw.failed(ctx, start, err) {
			return nil, ctx.Err()
		}
	}
}

// watchStreamBroke reports a watch stream that broke and makes the next watch
// wait out the backoff.
func (lw *listWatch) watchStreamBroke(ctx context.Context) func(error) {
	return func(err error) {
		lw.watchBroken.Store(true)
		lw.report(ctx, Failure{Reason: failure.WatchFailed}, err, 0)
	}
}

func (lw *listWatch) takePending(rv string) *pendingWatch {
	lw.mu.Lock()
	p := lw.pending
	lw.pending = nil
	lw.mu.Unlock()
	if p == nil {
		return nil
	}
	if p.rv != rv {
		p.w.Stop()
		return nil
	}
	return p
}

func (lw *listWatch) dropPending() {
	lw.mu.Lock()
	p := lw.pending
	lw.pending = nil
	lw.mu.Unlock()
	if p != nil {
		p.w.Stop()
	}
}

func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) ||
		(apierrors.IsTimeout(err) && apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)) ||
		apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

// refusesStreaming reports whether err is a server's refusal of streaming lists
// (an API server with the WatchList feature off rejects sendInitialEvents as an
// invalid request), as opposed to a failure of one attempt.
func refusesStreaming(err error) bool {
	if errors.Is(err, errStreamingIgnored) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return true
	}
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code == 422
}

// maxStalls is how many watches in a row may stall before the informer lists again.
const maxStalls = 2

// errStalled is the error of a watch silent for longer than the idle timeout.
var errStalled = errors.New("watch stalled")

// errStreamingIgnored is a server answering a streaming list with a plain watch.
var errStreamingIgnored = errors.New("the server ignored sendInitialEvents: it sent a bookmark before the end of the initial events")

func stalled(idle time.Duration) error {
	return fmt.Errorf("%w: no event or bookmark for %s", errStalled, idle)
}

// diff calls emit with the changes that turn the store into items: ADDED for an
// object the store lacks, MODIFIED for one that differs from the stored object
// (an unchanged object is the stored object itself, see keep), DELETED with the
// stored object for a key that items lack. It stops when emit returns false and
// reports whether it finished.
func (lw *listWatch) diff(items []kruntime.Object, emit func(watch.Event) bool) bool {
	keys := make([]string, 0, len(items))
	stored := 0
	for _, obj := range items {
		key, err := cache.MetaNamespaceKeyFunc(obj)
		if err != nil {
			continue // keep has accessed its metadata already
		}
		keys = append(keys, key)
		old, exists, _ := lw.store.GetByKey(key)
		switch {
		case !exists:
			if !emit(watch.Event{Type: watch.Added, Object: obj}) {
				return false
			}
			continue
		case old != any(obj):
			if !emit(watch.Event{Type: watch.Modified, Object: obj}) {
				return false
			}
		}
		stored++
	}
	storeKeys := lw.store.ListKeys()
	if stored == len(storeKeys) {
		return true // every stored key was listed
	}
	listed := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		listed[k] = struct{}{}
	}
	for _, k := range storeKeys {
		if _, ok := listed[k]; ok {
			continue
		}
		old, exists, _ := lw.store.GetByKey(k)
		o, ok := old.(kruntime.Object)
		if !exists || !ok {
			continue
		}
		if !emit(watch.Event{Type: watch.Deleted, Object: o}) {
			return false
		}
	}
	return true
}

// bookmark returns a bookmark object at rv, of the type of the listed objects (or
// the informer's example), which the reflector accepts in a watch.
func (lw *listWatch) bookmark(rv string, items []kruntime.Object) (kruntime.Object, bool) {
	like := lw.example
	if len(items) > 0 {
		like = items[0]
	}
	if like == nil || reflect.TypeOf(like).Kind() != reflect.Pointer {
		return nil, false
	}
	obj, ok := reflect.New(reflect.TypeOf(like).Elem()).Interface().(kruntime.Object)
	if !ok {
		return nil, false
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetGroupVersionKind(like.GetObjectKind().GroupVersionKind())
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	m.SetResourceVersion(rv)
	return obj, true
}
