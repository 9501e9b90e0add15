package leanstore

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/pkg/failure"
)

// maxStalls is how many watches in a row may stall before the informer lists again.
const maxStalls = 2

// startWatch opens a watch from opts.ResourceVersion, retrying failed starts
// with backoff until one succeeds, ctx ends, or the server says the
// resourceVersion is gone.
func (lw *listWatch) startWatch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	p := lw.newWatchProbe(opts)
	for {
		w, d, err := lw.openWatch(ctx, lw.opts.listOptions(opts), lw.watchStreamBroke(ctx))
		if err == nil {
			lw.tracker.watchStarted()
			return newLeanWatch(ctx, lw, &probedWatch{w: w, final: d != nil}, opts), nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		start := failedAttempt{Reason: failure.WatchStartFailed}
		if isExpired(err) {
			lw.retry.Report(ctx, start, err, 0)
			return nil, reportedError{err}
		}
		if !lw.retry.Failed(ctx, start, err, p.probe) {
			return nil, ctx.Err()
		}
		if pw := p.take(); pw != nil {
			lw.tracker.watchStarted()
			return newLeanWatch(ctx, lw, pw, opts), nil
		}
	}
}
