package reflector

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/failure"
)

// ListWatch is the cache.ListerWatcher behind every leanstore informer: the
// methods client-go's reflector calls. Its work is split by stage, each file
// using only those below it:
//
//   - lister.go: a complete list (lister), by a streaming list
//     (streamingList, streaming_list.go) or a paged LIST (pagedList,
//     paged_list.go), each object stripped as soon as it is decoded, or
//     replaced by the handed object when it is unchanged (conn.keep);
//   - watch.go: the watch (leanWatch), resumed through probes
//     (watchProbe, watch_probe.go), the re-list inside it after a 410, which
//     calls the informer's one list function and hands client-go only the
//     differences from what it already has (handed.go), and the events of
//     other shards (shardSkips, skips.go);
//   - handoff.go: what a list leaves the next watch, a streaming list's open
//     stream, and what a cut re-list leaves the next WatchWithContext;
//   - conn.go: the source, the lean protobuf decoder (internal/wire, through
//     wire_caller.go) and the streams both stages open;
//   - RetryState (retry.go): the failures, backoff and stall counts both
//     stages share.
//
// It tells the reflector that it does not support WatchList semantics, so the
// reflector always calls List: ListWatch decides itself between a streaming
// list and a paged LIST, remembers when the server refuses streaming lists,
// retries failed lists with its own backoff, and reports every failure.
type ListWatch struct {
	c      *conn
	lister *lister
	// watches is what every watch of the informer shares.
	watches *watching
	next    *handoff
}

var (
	_ cache.ListerWatcher            = (*ListWatch)(nil)
	_ cache.ListerWatcherWithContext = (*ListWatch)(nil)
)

// New returns the list and watch of the informer cfg describes.
func New(cfg Config) *ListWatch {
	handed := cfg.Handed
	if handed == nil {
		handed = NewHanded()
	}
	var shard Shard = everyShard{}
	if cfg.Shard != nil {
		shard = cfg.Shard
	}
	refusals := cfg.Refusals
	if refusals == nil {
		refusals = &StreamingState{}
	}
	c := &conn{
		src: cfg.Source, raw: cfg.Raw, gr: cfg.Resource, scope: cfg.listOptions, strip: cfg.Strip, shard: shard,
		handed: handed, retry: NewRetryState(cfg.Reporter, cfg.Backoff), report: cfg.Reporter, log: cfg.Logger,
	}
	next := &handoff{}
	ls := &lister{
		c: c, next: next, pageSize: cfg.PageSize, idleTimeout: cfg.IdleTimeout, heapBound: cfg.HeapBound,
		streaming: cfg.Streaming, streamingWhy: cfg.StreamingWhy, refusals: refusals,
	}
	return &ListWatch{
		c: c, lister: ls, next: next,
		watches: &watching{c: c, list: ls.list, next: next, idleTimeout: cfg.IdleTimeout, example: cfg.Example},
	}
}

// GuardHandOver gives the list the informer's HasSynced (takenIn): until it
// reports true, the heap bound stays on after the first list, while the
// informer takes in what the list handed it (Pacer.GuardHandOver). Call it
// before the informer runs.
func (lw *ListWatch) GuardHandOver(takenIn func() bool) { lw.lister.takenIn = takenIn }

// IsWatchListSemanticsUnSupported tells client-go's reflector to call List rather
// than run its own streaming list: ListWatch streams inside List.
func (lw *ListWatch) IsWatchListSemanticsUnSupported() bool { return true }

// List implements cache.Lister; the reflector calls ListWithContext.
func (lw *ListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

// Watch implements cache.Watcher; the reflector calls WatchWithContext.
func (lw *ListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

// ListWithContext lists every object, retrying with backoff until it succeeds or
// ctx ends, and returns them in a list whose items are the objects to store
// (unchanged ones are the handed objects themselves). The reflector replaces
// its store with them, so they become the handed set.
func (lw *ListWatch) ListWithContext(ctx context.Context, reflectorOpts metav1.ListOptions) (runtime.Object, error) {
	lw.next.drop()
	res, err := lw.lister.list(ctx, listRV(reflectorOpts.ResourceVersion))
	if err != nil {
		return nil, err
	}
	lw.c.handed.Replace(res.items)
	defer res.done() // the guard's grace covers the reflector's Replace that follows
	lw.next.listed()
	lw.c.shard.Took() // the reflector replaces its store with this shard's objects (WithShard)
	return &objectList{ListMeta: metav1.ListMeta{ResourceVersion: res.rv}, Items: res.items}, nil
}

// maxStalls is how many watches in a row may stall before the informer lists again.
const maxStalls = 2

// WatchWithContext opens a watch, retrying with backoff until it succeeds, ctx
// ends, or the server says the resourceVersion is too old (then the reflector
// must list again). The returned watch strips objects, reports errors, lists
// again inside itself after a 410, and ends itself when it has been silent for
// longer than the idle time-out.
func (lw *ListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	c := lw.c
	if p := lw.next.take(opts.ResourceVersion); p != nil {
		c.report.WatchStarted()
		return newLeanWatch(ctx, lw.watches, &probedWatch{w: p.w, final: p.final}, opts), nil
	}
	if lw.next.cutShort() {
		c.log.Info("a re-list's differences were cut short: listing again")
		return nil, ReportedError{apierrors.NewResourceExpired("a re-list inside the watch was cut short; listing again")}
	}
	p := newWatchProbe(c, opts)
	probe := p.probe
	if c.retry.Stalled.Load() {
		probe = nil // a stalled watch is as quiet as a working one: no probe tells them apart
	}
	if c.retry.WatchBroken.Swap(false) &&
		!c.retry.WaitOrHealed(ctx, FailedAttempt{Reason: failure.WatchFailed}, c.retry.Backoff.Delay(), probe) {
		return nil, ctx.Err()
	}
	if pw := p.take(); pw != nil {
		c.report.WatchStarted()
		return newLeanWatch(ctx, lw.watches, pw, opts), nil
	}
	if c.retry.Stalls.Load() >= maxStalls {
		c.retry.Stalls.Store(0)
		c.log.Info("watches keep stalling: listing again", "stalls", maxStalls)
		return nil, ReportedError{apierrors.NewResourceExpired("watches stalled; listing again")}
	}
	return lw.startWatch(ctx, opts)
}

// startWatch opens a watch from opts.ResourceVersion, retrying failed starts
// with backoff until one succeeds, ctx ends, or the server says the
// resourceVersion is gone.
func (lw *ListWatch) startWatch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	c := lw.c
	p := newWatchProbe(c, opts)
	for {
		w, d, err := c.openWatch(ctx, opts, c.watchStreamBroke(ctx))
		if err == nil {
			c.report.WatchStarted()
			return newLeanWatch(ctx, lw.watches, &probedWatch{w: w, final: d != nil}, opts), nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		start := FailedAttempt{Reason: failure.WatchStartFailed}
		if isExpired(err) {
			c.retry.Report(ctx, start, err, 0)
			return nil, ReportedError{err}
		}
		if !c.retry.Failed(ctx, start, err, p.probe) {
			return nil, ctx.Err()
		}
		if pw := p.take(); pw != nil {
			c.report.WatchStarted()
			return newLeanWatch(ctx, lw.watches, pw, opts), nil
		}
	}
}
