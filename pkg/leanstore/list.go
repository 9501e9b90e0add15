package leanstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/internal/wire"
	"github.com/cachetune/cachetune/pkg/failure"
)

// Lists. client-go's reflector decodes a whole LIST (or collects a whole
// streaming list) before its transform runs, and on a re-list it builds a full
// second copy of the store next to the first. leanstore lists object by object
// instead: each object is stripped as soon as it is decoded, a paged LIST
// releases each page before asking for the next, and an object whose uid and
// resourceVersion match the handed one is replaced by it at once, so a re-list
// of an unchanged store allocates almost nothing that lives.

// listRV is the resourceVersion a list asks for, given the reflector's.
//
// The reflector asks for "0" on its first list: any version, which the API
// server answers from its watch cache in one response, ignoring the page size.
// leanstore asks for "" instead, a consistent read, for two reasons: its paged
// LIST then really pages (the decoder streams each page, so a page bounds the
// memory a list needs), and a controller that restarts never starts from a
// watch cache older than what it saw before the restart. The API server serves
// consistent lists from its watch cache too (ConsistentListFromCache, on since
// Kubernetes 1.31), after one quorum read of etcd's current revision; see
// docs/memory.md for the measured server cost of both.
func (lw *listWatch) listRV(reflectorRV string) string {
	if reflectorRV == "0" {
		return ""
	}
	return reflectorRV
}

// list lists every object from rv ("" for the latest), by a streaming list or a
// paged LIST, retrying with backoff until it succeeds or ctx ends.
func (lw *listWatch) list(ctx context.Context, rv string) (listResult, error) {
	l := &listing{rv: rv, pace: newPacer(lw.opts.heapBound).relisting(lw.health.synced.Load()).reportTo(lw.health.tracker),
		failure: failedAttempt{Reason: failure.InitialListFailed, Relist: lw.health.synced.Load()}}
	for {
		if err := lw.prepareList(ctx); err != nil {
			if ctx.Err() != nil || !lw.health.failed(ctx, l.failure, err, nil) {
				return listResult{}, ctx.Err()
			}
			continue
		}
		if lw.useStreaming() && l.streamFailures < maxStreamFailures {
			res, err := lw.streamingList(ctx, l.rv, l.pace)
			if err == nil {
				l.pace.finish()
				return lw.listed(res, ListPathStreaming, lw.state.streamingReason()), nil
			}
			switch lw.streamingFailed(ctx, l, err) {
			case listEnded:
				return listResult{}, ctx.Err()
			case listAgain:
				continue
			}
		}
		res, err := lw.pagedList(ctx, l.rv, l.pace)
		if err == nil {
			l.pace.finish()
			why := l.pagedWhy
			if why == "" {
				why = lw.pagedReason()
			}
			return lw.listed(res, ListPathPaged, why), nil
		}
		if !lw.pagedFailed(ctx, l, err) {
			return listResult{}, ctx.Err()
		}
	}
}

// listing is one list's state across its attempts.
type listing struct {
	// rv is the resourceVersion to list from; "" once it expired.
	rv      string
	pace    *pacer
	failure failedAttempt
	// streamFailures counts this list's failed streaming lists: after
	// maxStreamFailures the list uses a paged LIST, whose failures are
	// retried with cheap probes (see waitOrHealed) and so recover as soon as
	// the server does.
	streamFailures int
	// pagedWhy says why the list fell back to a paged LIST, when it did.
	pagedWhy string
}

// listStep is what a list does after a failed streaming list.
type listStep int

const (
	listAgain listStep = iota // from the top, streaming again if it may
	listPaged                 // with a paged LIST right away
	listEnded                 // not at all: ctx ended
)

// prepareList readies a list: with WithShard it takes the membership's
// latest ring (shard.go) and waits for the membership to be ready; then the
// source resolves the resource.
func (lw *listWatch) prepareList(ctx context.Context) error {
	if err := lw.shard.apply(ctx); err != nil {
		return err
	}
	return lw.src.resolve(ctx)
}

// streamingFailed reports a failed streaming list, waits out the backoff
// where one is due, and says what the list does next.
func (lw *listWatch) streamingFailed(ctx context.Context, l *listing, err error) listStep {
	if ctx.Err() != nil {
		return listEnded
	}
	f := l.failure
	f.Streaming = true
	switch {
	case errors.Is(err, errAnsweredJSON):
		lw.answeredJSON(err)
		return listAgain
	case errors.Is(err, errNoInitialEventsEnd):
		f.Reason = failure.InitialEventsEndMissing
		lw.health.report(ctx, f, err, 0)
		lw.state.refuse(lw.opts.streaming, err)
		return listPaged
	case refusesStreaming(err):
		lw.state.refuse(lw.opts.streaming, err)
		return listPaged
	case errors.Is(err, errStalled):
		// Nothing came, not even the end of the initial events: list with
		// LIST this time rather than wait another idle period.
		lw.health.report(ctx, f, err, 0)
		return listPaged
	case isExpired(err) && l.rv != "":
		lw.health.report(ctx, f, err, 0)
		l.rv = ""
		return listAgain
	}
	if l.streamFailures++; l.streamFailures >= maxStreamFailures {
		lw.health.report(ctx, f, err, 0)
		l.pagedWhy = fmt.Sprintf("%d streaming lists failed in a row; listing with LIST this time", l.streamFailures)
		return listPaged
	}
	if !lw.health.failed(ctx, f, err, nil) {
		return listEnded
	}
	return listAgain
}

// pagedFailed reports a failed paged LIST and waits out the backoff (probed,
// see probeList) where one is due; false means ctx ended.
func (lw *listWatch) pagedFailed(ctx context.Context, l *listing, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	switch {
	case errors.Is(err, errAnsweredJSON):
		lw.answeredJSON(err)
		return true
	case isExpired(err) && l.rv != "":
		lw.health.report(ctx, l.failure, err, 0)
		l.rv = ""
		return true
	}
	return lw.health.failed(ctx, l.failure, err, lw.probeList)
}

// maxStreamFailures is how many streaming lists in a row may fail before a
// list falls back to a paged LIST for this once.
const maxStreamFailures = 2

// probeList asks whether lists work again with a list of one object, decoded
// by the client: a fraction of the cost of the list that failed.
func (lw *listWatch) probeList(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := lw.src.list(ctx, lw.opts.listOptions(metav1.ListOptions{Limit: 1}))
	return err
}

// listResult is a complete list, ready for the reflector.
type listResult struct {
	items  []kruntime.Object
	rv     string
	reused int
}

// listed records a successful list.
func (lw *listWatch) listed(res listResult, path ListPath, reason string) listResult {
	lw.health.listed(path, reason, len(res.items), res.reused)
	lw.mu.Lock()
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

// pagedReason says why the informer listed with a paged LIST.
func (lw *listWatch) pagedReason() string {
	if lw.streamingWhy != "" {
		return lw.streamingWhy
	}
	return lw.state.pagedReason(lw.streaming)
}

func (lw *listWatch) useStreaming() bool {
	switch lw.streaming {
	case StreamingOff:
		return false
	case StreamingAuto:
		return !lw.state.refused()
	}
	return true
}

// pagedList lists page by page. Each page's objects are stripped (or replaced by
// the unchanged handed object) and copied out of the page, so the page itself is
// garbage before the next one arrives.
func (lw *listWatch) pagedList(ctx context.Context, rv string, pace *pacer) (listResult, error) {
	var res listResult
	opts := metav1.ListOptions{Limit: lw.opts.pageSize, ResourceVersion: rv}
	if rv != "" {
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	page := lw.decodedPage
	if raw := lw.rawSource(); raw != nil {
		page = lw.rawPage(raw, lw.newDecoder(ctx, raw))
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
		kept, reused, err := lw.keep(obj, true, lw.reuses(ctx))
		if err != nil {
			return err
		}
		if kept == nil { // another shard's (WithShard)
			lw.shard.skippedListed.Add(1)
			return nil
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
func (lw *listWatch) rawPage(raw rawSource, d *wire.Decoder) func(context.Context, metav1.ListOptions, *pacer) (listResult, string, error) {
	return func(ctx context.Context, opts metav1.ListOptions, pace *pacer) (listResult, string, error) {
		body, err := raw.rawList(ctx, opts)
		if err != nil {
			return listResult{}, "", err
		}
		defer body.Close()
		return decodeList(d, body, lw.shard, pace)
	}
}

func (lw *listWatch) newDecoder(ctx context.Context, raw rawSource) *wire.Decoder {
	v := lw.view
	if !lw.reuses(ctx) {
		v = nil
	}
	return newWireDecoder(raw.newObject, lw.gr(), v, lw.strip, lw.shard)
}

// reuseKey marks the context of a re-list inside the watch (relist).
type reuseKey struct{}

func withReuse(ctx context.Context) context.Context { return context.WithValue(ctx, reuseKey{}, true) }

// reuses reports whether a list or watch on ctx may return the view's object
// for an unchanged one. Always, but under an encoded store, whose view keeps
// records (see record): a record must never reach the reflector, so only a
// re-list inside the watch, which hands the reflector only what changed,
// reuses there; any other list decodes every object.
func (lw *listWatch) reuses(ctx context.Context) bool {
	return !lw.view.compact || ctx.Value(reuseKey{}) != nil
}

// initialEventsEndWait bounds how long a streaming list waits for the bookmark
// that ends its initial events, counted from the last event (or from the start,
// when no event came). A server that serves streaming lists sends it right after
// the last initial object; one that ignores sendInitialEvents (aggregated API
// servers, kubernetes/kubernetes#140890) never does, and a client that waits for
// it would never sync. The informer's idle time-out (WithWatchIdleTimeout) bounds
// the wait too when it is shorter.
var initialEventsEndWait = 10 * time.Second

// streamingList runs a streaming list: a watch that first sends every object as
// an ADDED event, then a bookmark marking the end of the initial events. The
// bookmark must come within initialEventsEndWait of the last event: a stream
// that goes quiet with objects sent, that carries a change (MODIFIED or DELETED)
// or a plain bookmark before it, or that ends cleanly without it, comes from a
// server that does not send it, which errNoInitialEventsEnd reports.
func (lw *listWatch) streamingList(ctx context.Context, rv string, pace *pacer) (listResult, error) {
	// A break while the initial events stream is this list's failure; after the
	// initial-events-end bookmark the stream carries on as the reflector's watch
	// (see pendingWatch), and a break is reported as a watch failure.
	brk := &listBreak{}
	w, d, err := lw.openWatch(ctx, lw.streamingListOptions(rv), brk.onBroken(lw.watchStreamBroke(ctx)))
	if err != nil {
		return listResult{}, err
	}
	res := listResult{items: make([]kruntime.Object, 0, lw.listSizeHint())}
	quiet := initialEventsEndWait
	if idle := lw.opts.idleTimeout; idle > 0 && idle < quiet {
		quiet = idle
	}
	timer := time.NewTimer(quiet)
	defer timer.Stop()
	events := 0
	for {
		select {
		case <-ctx.Done():
			w.Stop()
			return res, ctx.Err()
		case <-timer.C:
			w.Stop()
			if events == 0 {
				return res, stalled(quiet)
			}
			return res, fmt.Errorf("%w: nothing for %s after %d objects", errNoInitialEventsEnd, quiet, len(res.items))
		case ev, ok := <-w.ResultChan():
			if !ok {
				return res, lw.streamEnded(brk.err(), events, len(res.items))
			}
			events++
			timer.Reset(quiet)
			var err error
			switch ev.Type {
			case watch.Added:
				err = lw.addStreamed(&res, ev.Object, d == nil, lw.reuses(ctx), pace)
			case eventSkipped: // another shard's, from the lean decoder (WithShard)
				lw.shard.skippedListed.Add(1)
			case watch.Modified, watch.Deleted:
				err = fmt.Errorf("%w: a %s event came after %d objects", errNoInitialEventsEnd, ev.Type, len(res.items))
			case watch.Bookmark:
				if err = lw.initialEventsEnd(&res, ev, d); err == nil {
					brk.listed()
					lw.setPending(ctx, w, res.rv, d != nil)
					return res, nil
				}
			case watch.Error:
				err = apierrors.FromObject(ev.Object)
			}
			if err != nil {
				w.Stop()
				return res, err
			}
		}
	}
}

// streamingListOptions are the options of a streaming list from rv.
func (lw *listWatch) streamingListOptions(rv string) metav1.ListOptions {
	timeout := int64((5 + rand.Float64()*5) * 60) // like client-go: 5 to 10 minutes
	send := true
	return lw.opts.listOptions(metav1.ListOptions{
		ResourceVersion:      rv,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    &send,
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       &timeout,
	})
}

// streamEnded is the error of a streaming list whose stream closed before
// the end of its initial events: brk, when it broke.
func (lw *listWatch) streamEnded(brk error, events, items int) error {
	switch {
	case brk != nil:
		return brk
	case events == 0:
		return fmt.Errorf("streaming list of %s ended before any event", lw.gr())
	}
	return fmt.Errorf("%w: the stream ended after %d objects", errNoInitialEventsEnd, items)
}

// addStreamed adds a streamed object to res; decode says it still needs
// stripping (it does not come from the lean decoder).
func (lw *listWatch) addStreamed(res *listResult, obj kruntime.Object, decode, reuse bool, pace *pacer) error {
	reused := false
	if decode {
		var err error
		if obj, reused, err = lw.keep(obj, false, reuse); err != nil {
			return err
		}
		if obj == nil { // another shard's (WithShard)
			lw.shard.skippedListed.Add(1)
			return nil
		}
	}
	res.items = append(res.items, obj)
	if reused {
		res.reused++
	}
	pace.tick()
	return nil
}

// initialEventsEnd completes res with the bookmark that ends a streaming
// list's initial events. Any other bookmark is an error: a server that serves
// streaming lists sends none before the end of the initial events, so this
// one ignored sendInitialEvents (an API server older than 1.27).
func (lw *listWatch) initialEventsEnd(res *listResult, ev watch.Event, d *wire.Decoder) error {
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return fmt.Errorf("streaming list of %s: bookmark: %w", lw.gr(), err)
	}
	if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
		return errStreamingIgnored
	}
	res.rv = m.GetResourceVersion()
	if d != nil {
		res.reused = d.Reused()
	}
	return nil
}

// keep returns the object to store for obj: the handed object when it has the
// same uid and resourceVersion, otherwise obj stripped. copyOut makes a private
// copy of obj first when it lives inside a list's item array, so that the array
// can be freed. It returns nil, and no error, for an object of another shard.
// reuse false never returns the handed object (see reuses).
func (lw *listWatch) keep(obj kruntime.Object, copyOut, reuse bool) (kruntime.Object, bool, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %T has no metadata: %w", lw.gr(), obj, err)
	}
	// Sharding (shard.go): another shard's object is dropped before stripping.
	if !lw.shard.owns(obj) {
		return nil, false, nil
	}
	if old, ok := lw.view.get(m.GetNamespace(), m.GetName()); ok && reuse {
		if om, err := meta.Accessor(old); err == nil && om.GetUID() == m.GetUID() && om.GetResourceVersion() == m.GetResourceVersion() {
			return old, true, nil
		}
	}
	if copyOut {
		obj = shallowCopy(obj)
	}
	out, err := lw.strip.Apply(obj, lw.gr())
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

func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) ||
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

var (
	// errStreamingIgnored is a server answering a streaming list with a plain watch.
	errStreamingIgnored = errors.New("the server ignored sendInitialEvents: it sent a bookmark before the end of the initial events")
	// errNoInitialEventsEnd is a streaming list whose initial-events-end
	// bookmark did not come.
	errNoInitialEventsEnd = errors.New("the server sent no initial-events-end bookmark")
)

// listBreak holds what broke a streaming list's stream while its initial
// events were still coming; after them, a break is the watch's.
type listBreak struct {
	mu      sync.Mutex
	broken  error
	done    bool
	onWatch func(error)
}

func (b *listBreak) onBroken(onWatch func(error)) func(error) {
	b.onWatch = onWatch
	return func(err error) {
		b.mu.Lock()
		if b.done {
			b.mu.Unlock()
			b.onWatch(err)
			return
		}
		b.broken = err
		b.mu.Unlock()
	}
}

func (b *listBreak) listed() {
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
}

func (b *listBreak) err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.broken
}
