package leanstore

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/failure"
)

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
