package leanstore

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/reflector"
	"github.com/cachetune/cachetune/internal/shrink"
	"github.com/cachetune/cachetune/pkg/failure"
)

// listWatch is the cache.ListerWatcher behind every leanstore informer. Its work
// is split by stage, each file using only those below it:
//
//   - list.go: a complete list, by a streaming list (list_streaming.go) or a
//     paged LIST (list_paged.go), each object stripped as soon as it is decoded,
//     or replaced by the handed object when it is unchanged (keep.go);
//   - watch_start.go and watch.go: the watch (leanWatch), resumed through
//     probes (watch_probe.go), and the re-list inside it after a 410
//     (watch_relist.go), which uses list.go and hands client-go only the
//     differences from what it already has (internal/reflector, handed.go);
//   - stream.go: the watch streams both stages open; pending.go: a streaming
//     list's stream, kept for the next watch;
//   - wire_caller.go: what the lean protobuf decoder (internal/wire) asks of it;
//   - reflector.RetryState (internal/reflector, retry.go): the failures,
//     backoff and stall counts both stages share.
//
// It tells the reflector that it does not support WatchList semantics, so the
// reflector always calls List: listWatch decides itself between a streaming list
// and a paged LIST, remembers when the server refuses streaming lists, retries
// failed lists with its own backoff, and reports every failure.
type listWatch struct {
	src     source
	gr      func() schema.GroupResource
	opts    *options
	strip   *shrink.Pipeline
	state   *factoryState
	retry   *reflector.RetryState
	tracker *tracker
	// handed is what the reflector has been handed: the last list and every
	// watch event since.
	handed *reflector.Handed
	// example is an empty object of the informer's type, for bookmarks.
	example runtime.Object
	// streaming is the informer's streaming mode (see effectiveStreaming) and
	// streamingWhy the reason when it differs from the one asked for.
	streaming    StreamingMode
	streamingWhy string
	// shard drops the objects of other shards (WithShard, shard.go); nil
	// keeps every object.
	shard *shardFilter

	mu sync.Mutex
	// raw is src when it can hand out raw protobuf responses, which the lean
	// decoder reads (internal/wire); nil otherwise, and nil again once the
	// server has answered JSON to a protobuf request.
	raw rawSource
	// lastCount is the size of the last list, to size the next one's slice.
	lastCount int
	// pending is the stream of the last streaming list, for the next Watch.
	pending *pendingWatch
	// diffCut is set when a re-list's differences could not all be handed to
	// the reflector (the watch was stopped part-way): the next watch must not
	// resume from the reflector's resourceVersion, which may be past a
	// deletion it was never told about.
	diffCut bool
}

var (
	_ cache.ListerWatcher            = (*listWatch)(nil)
	_ cache.ListerWatcherWithContext = (*listWatch)(nil)
)

// IsWatchListSemanticsUnSupported tells client-go's reflector to call List rather
// than run its own streaming list: listWatch streams inside List.
func (lw *listWatch) IsWatchListSemanticsUnSupported() bool { return true }

// List implements cache.Lister; the reflector calls ListWithContext.
func (lw *listWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

// Watch implements cache.Watcher; the reflector calls WatchWithContext.
func (lw *listWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

// ListWithContext lists every object, retrying with backoff until it succeeds or
// ctx ends, and returns them in a list whose items are the objects to store
// (unchanged ones are the handed objects themselves). The reflector replaces
// its store with them, so they become the handed set.
func (lw *listWatch) ListWithContext(ctx context.Context, reflectorOpts metav1.ListOptions) (runtime.Object, error) {
	lw.dropPending()
	res, err := lw.list(ctx, lw.listRV(reflectorOpts.ResourceVersion))
	if err != nil {
		return nil, err
	}
	lw.handed.Replace(res.items)
	lw.mu.Lock()
	lw.diffCut = false
	lw.mu.Unlock()
	lw.shard.took() // the reflector replaces its store with this shard's objects (WithShard)
	return &objectList{ListMeta: metav1.ListMeta{ResourceVersion: res.rv}, Items: res.items}, nil
}

// WatchWithContext opens a watch, retrying with backoff until it succeeds, ctx
// ends, or the server says the resourceVersion is too old (then the reflector
// must list again). The returned watch strips objects, reports errors, lists
// again inside itself after a 410, and ends itself when it has been silent for
// longer than the idle time-out.
func (lw *listWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if p := lw.takePending(opts.ResourceVersion); p != nil {
		lw.tracker.watchStarted()
		return newLeanWatch(ctx, lw, &probedWatch{w: p.w, final: p.final}, opts), nil
	}
	lw.mu.Lock()
	cut := lw.diffCut
	lw.mu.Unlock()
	if cut {
		lw.tracker.logger.Info("a re-list's differences were cut short: listing again")
		return nil, reportedError{apierrors.NewResourceExpired("a re-list inside the watch was cut short; listing again")}
	}
	p := lw.newWatchProbe(opts)
	probe := p.probe
	if lw.retry.Stalled.Load() {
		probe = nil // a stalled watch is as quiet as a working one: no probe tells them apart
	}
	if lw.retry.WatchBroken.Swap(false) &&
		!lw.retry.WaitOrHealed(ctx, failedAttempt{Reason: failure.WatchFailed}, lw.retry.Backoff.Delay(), probe) {
		return nil, ctx.Err()
	}
	if pw := p.take(); pw != nil {
		lw.tracker.watchStarted()
		return newLeanWatch(ctx, lw, pw, opts), nil
	}
	if lw.retry.Stalls.Load() >= maxStalls {
		lw.retry.Stalls.Store(0)
		lw.tracker.logger.Info("watches keep stalling: listing again", "stalls", maxStalls)
		return nil, reportedError{apierrors.NewResourceExpired("watches stalled; listing again")}
	}
	return lw.startWatch(ctx, opts)
}

// listSizeHint is the expected number of objects of the next list.
func (lw *listWatch) listSizeHint() int {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.lastCount
}

// rawSource returns the source of raw protobuf responses, or nil when objects
// are decoded by the client (JSON, or a client without a REST client).
func (lw *listWatch) rawSource() rawSource {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.raw
}

// answeredJSON switches the informer to the client's own decoding for good:
// the server answered JSON to a request for protobuf, as aggregated API
// servers without protobuf support and some proxies do.
func (lw *listWatch) answeredJSON(err error) {
	lw.mu.Lock()
	was := lw.raw != nil
	lw.raw = nil
	lw.mu.Unlock()
	if was {
		lw.tracker.setWire("json (protobuf was asked for; the server answered JSON)")
		lw.tracker.logger.Info("the server answers JSON to protobuf requests: decoding JSON from now on", "err", err.Error())
	}
}
