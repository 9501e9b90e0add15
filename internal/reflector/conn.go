package reflector

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/internal/shrink"
	"github.com/cachetune/cachetune/internal/wire"
	"github.com/cachetune/cachetune/pkg/failure"
)

// conn is what lists and watches share to reach the server and to make what
// it sends ready for the reflector: the source and its encoding, the shrink
// pipeline, the shard, the handed set and the retry state. It opens watches
// (openWatch), for the watch and for a streaming list alike.
type conn struct {
	src   Source
	gr    func() schema.GroupResource
	scope func(metav1.ListOptions) metav1.ListOptions
	strip *shrink.Pipeline
	// shard drops the objects of other shards (everyShard without sharding).
	shard Shard
	// handed is what the reflector has been handed: the last list and every
	// watch event since.
	handed *Handed
	retry  *RetryState
	report Reporter
	log    logr.Logger
	// pack packs listed objects for the informer's store; nil keeps them
	// decoded (see Packer).
	pack Packer

	mu sync.Mutex
	// raw is src when it can hand out raw protobuf responses, which the lean
	// decoder reads (internal/wire); nil otherwise, and nil again once the
	// server has answered JSON to a protobuf request.
	raw RawSource
}

// rawSource returns the source of raw protobuf responses, or nil when objects
// are decoded by the client (JSON, or a client without a REST client).
func (c *conn) rawSource() RawSource {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.raw
}

// answeredJSON switches the informer to the client's own decoding for good:
// the server answered JSON to a request for protobuf, as aggregated API
// servers without protobuf support and some proxies do.
func (c *conn) answeredJSON(err error) {
	c.mu.Lock()
	was := c.raw != nil
	c.raw = nil
	c.mu.Unlock()
	if was {
		c.report.WireChanged("json (protobuf was asked for; the server answered JSON)")
		c.log.Info("the server answers JSON to protobuf requests: decoding JSON from now on", "err", err.Error())
	}
}

func (c *conn) newDecoder(ctx context.Context, raw RawSource) *wire.Decoder {
	v := c.handed
	if !c.reuses(ctx) {
		v = nil
	}
	return newWireDecoder(raw.NewObject, c.gr(), v, c.strip, c.shard)
}

// reuseKey marks the context of a re-list inside the watch (relist).
type reuseKey struct{}

func withReuse(ctx context.Context) context.Context { return context.WithValue(ctx, reuseKey{}, true) }

// reuses reports whether a list or watch on ctx may return the handed set's object
// for an unchanged one. Always, but under an encoded store, whose handed set keeps
// records (see Record): a record must never reach the reflector, so only a
// re-list inside the watch, which hands the reflector only what changed,
// reuses there; any other list decodes every object.
func (c *conn) reuses(ctx context.Context) bool {
	return !c.handed.Compact || ctx.Value(reuseKey{}) != nil
}

func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) ||
		apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

// openWatch starts a watch with opts (the informer's scope is applied here):
// a lean protobuf stream when the source allows it. The result's objects are
// final (stripped, or the handed ones) when d is not nil.
func (c *conn) openWatch(ctx context.Context, opts metav1.ListOptions, onBroken func(error)) (w watch.Interface, d *wire.Decoder, err error) {
	opts = c.scope(opts)
	raw := c.rawSource()
	if raw == nil {
		w, err = c.src.Watch(ctx, opts)
		return w, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	body, err := raw.RawWatch(ctx, opts)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	d = c.newDecoder(ctx, raw)
	return wire.NewWatch(body, cancel, d, skippedEvent, onBroken), d, nil
}

// watchStreamBroke reports a watch stream that broke and makes the next watch
// wait out the backoff; a stream that turned out to be JSON switches the
// informer to JSON instead, and the next watch starts at once.
func (c *conn) watchStreamBroke(ctx context.Context) func(error) {
	return func(err error) {
		if errors.Is(err, errAnsweredJSON) {
			c.answeredJSON(err)
			return
		}
		c.retry.WatchBroken.Store(true)
		c.retry.Report(ctx, FailedAttempt{Reason: failure.WatchFailed}, err, 0)
	}
}

// keep returns the object to store for obj: the handed object when it has the
// same uid and resourceVersion, otherwise obj stripped. copyOut makes a private
// copy of obj first when it lives inside a list's item array, so that the array
// can be freed. It returns nil, and no error, for an object of another shard.
// reuse false never returns the handed object (see reuses).
func (c *conn) keep(obj runtime.Object, copyOut, reuse bool) (runtime.Object, bool, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %T has no metadata: %w", c.gr(), obj, err)
	}
	// Sharding: another shard's object is dropped before stripping.
	if !c.shard.Owns(obj) {
		return nil, false, nil
	}
	if old, ok := c.handed.Get(m.GetNamespace(), m.GetName()); ok && reuse {
		if om, err := meta.Accessor(old); err == nil && om.GetUID() == m.GetUID() && om.GetResourceVersion() == m.GetResourceVersion() {
			return old, true, nil
		}
	}
	if copyOut {
		obj = shallowCopy(obj)
	}
	o, err := c.stripped(obj)
	if err != nil {
		return nil, false, err
	}
	return o, false, nil
}

// stripped returns obj through the shrink pipeline.
func (c *conn) stripped(obj runtime.Object) (runtime.Object, error) {
	return shrinkObject(c.strip, c.handed, obj, c.gr())
}

// shrinkObject returns obj, one of gr's objects, through s; when s shares,
// beside the object of obj's key handed before (Handed.Previous), whose
// unchanged parts obj's new version takes.
func shrinkObject(s *shrink.Pipeline, handed *Handed, obj runtime.Object, gr schema.GroupResource) (runtime.Object, error) {
	return shrinkTaken(s, handed, obj, gr, 0)
}

// shrinkTaken is shrinkObject for an object whose top-level fields of taken
// the wire decoder took from the handed version (wire.Prior).
func shrinkTaken(s *shrink.Pipeline, handed *Handed, obj runtime.Object, gr schema.GroupResource, taken shrink.Fields) (runtime.Object, error) {
	var prev any
	if s.Share {
		prev = handed.Previous(obj)
	}
	out, err := s.ApplyTaken(obj, prev, gr, taken)
	if err != nil {
		return nil, err
	}
	o, ok := out.(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("%s: transform returned %T, not a runtime.Object", gr, out)
	}
	return o, nil
}

// shallowCopy moves a list item into its own allocation. It shares every field
// with the original, which is fine: the list is dropped right after.
func shallowCopy(obj runtime.Object) runtime.Object {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer {
		return obj
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	return cp.Interface().(runtime.Object)
}
