package reflector

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/pkg/failure"
)

// relist lists again after the server said the watch's resourceVersion is gone,
// hands the reflector the differences from what it has been handed (see
// Handed.Diff) and a bookmark at the list's resourceVersion, and goes on watching
// from there. False means the watch ends: it was stopped, or the new watch
// could not be opened (the reflector then watches again from the bookmark,
// through WatchWithContext's retries).
//
// A stopped relist leaves nothing half-done behind: when the watch stops before
// every difference was handed, the next WatchWithContext makes the reflector
// list again instead of resuming from a resourceVersion that may be past a
// deletion it was never told about.
func (w *leanWatch) relist(ctx context.Context) bool {
	w.inner.Stop()
	res, err := w.list(withReuse(ctx), "")
	if err != nil {
		return false // ctx ended: list retries every other failure
	}
	diff := w.c.handed.Diff(res.items, res.rv)
	for _, evs := range [][]watch.Event{diff.Changed, diff.Deleted} {
		for i, ev := range evs {
			if !w.send(ctx, ev) {
				for _, unsent := range evs[i:] {
					w.c.handed.LastStored(unsent.Object) // placeholders never handed (see recordGoneAt)
				}
				w.next.cut()
				return false
			}
		}
	}
	if bm, ok := bookmarkObject(w.example, res.rv, res.items); ok && !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: bm}) {
		w.next.drop()
		return false
	}
	w.c.shard.Took() // the reflector has this shard's objects of the list's ring (WithShard)
	if p := w.next.take(res.rv); p != nil {
		w.inner, w.final = p.w, p.final
	} else {
		opts := w.opts
		opts.ResourceVersion = res.rv
		inner, d, err := w.c.openWatch(ctx, opts, w.c.watchStreamBroke(ctx))
		if err != nil {
			if ctx.Err() == nil {
				w.c.retry.WatchBroken.Store(true)
				w.c.retry.Report(ctx, FailedAttempt{Reason: failure.WatchStartFailed}, err, 0)
			}
			return false
		}
		w.inner, w.final = inner, d != nil
	}
	w.c.report.WatchStarted()
	return true
}

// bookmarkObject returns a bookmark object at rv, of the type of the listed objects (or
// the informer's example), which the reflector accepts in a watch.
func bookmarkObject(example runtime.Object, rv string, items []runtime.Object) (runtime.Object, bool) {
	like := example
	if len(items) > 0 {
		if _, isRecord := items[0].(*Record); !isRecord {
			like = items[0]
		}
	}
	if like == nil || reflect.TypeOf(like).Kind() != reflect.Pointer {
		return nil, false
	}
	obj, ok := reflect.New(reflect.TypeOf(like).Elem()).Interface().(runtime.Object)
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
