package leanstore

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/internal/wire"
	"github.com/cachetune/cachetune/pkg/failure"
)

func (lw *listWatch) newDecoder(ctx context.Context, raw rawSource) *wire.Decoder {
	v := lw.handed
	if !lw.reuses(ctx) {
		v = nil
	}
	return newWireDecoder(raw.newObject, lw.gr(), v, lw.strip, lw.shard)
}

// reuseKey marks the context of a re-list inside the watch (relist).
type reuseKey struct{}

func withReuse(ctx context.Context) context.Context { return context.WithValue(ctx, reuseKey{}, true) }

// reuses reports whether a list or watch on ctx may return the handed set's object
// for an unchanged one. Always, but under an encoded store, whose handed set keeps
// records (see reflector.Record): a record must never reach the reflector, so only a
// re-list inside the watch, which hands the reflector only what changed,
// reuses there; any other list decodes every object.
func (lw *listWatch) reuses(ctx context.Context) bool {
	return !lw.handed.Compact || ctx.Value(reuseKey{}) != nil
}

func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) ||
		apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

// openWatch starts a watch: a lean protobuf stream when the source allows it.
// The result's objects are final (stripped, or the handed ones) when d is not nil.
func (lw *listWatch) openWatch(ctx context.Context, opts metav1.ListOptions, onBroken func(error)) (w watch.Interface, d *wire.Decoder, err error) {
	raw := lw.rawSource()
	if raw == nil {
		w, err = lw.src.watch(ctx, opts)
		return w, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	body, err := raw.rawWatch(ctx, opts)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	d = lw.newDecoder(ctx, raw)
	return wire.NewWatch(body, cancel, d, skippedEvent, onBroken), d, nil
}

// watchStreamBroke reports a watch stream that broke and makes the next watch
// wait out the backoff; a stream that turned out to be JSON switches the
// informer to JSON instead, and the next watch starts at once.
func (lw *listWatch) watchStreamBroke(ctx context.Context) func(error) {
	return func(err error) {
		if errors.Is(err, errAnsweredJSON) {
			lw.answeredJSON(err)
			return
		}
		lw.retry.WatchBroken.Store(true)
		lw.retry.Report(ctx, failedAttempt{Reason: failure.WatchFailed}, err, 0)
	}
}
