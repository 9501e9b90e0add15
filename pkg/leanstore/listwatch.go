package leanstore

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/internal/reflector"
	"github.com/cachetune/cachetune/internal/shrink"
)

// listWatch is the cache.ListerWatcher behind every leanstore informer
// (lister_watcher.go has the methods client-go calls). Its work is split by
// stage, each file using only those below it:
//
//   - list.go: a complete list, by a streaming list (list_streaming.go) or a
//     paged LIST (list_paged.go), each object stripped as soon as it is decoded,
//     or replaced by the handed object when it is unchanged (keep.go);
//   - watch_start.go and watch_run.go: the watch (leanWatch, watch.go),
//     resumed through probes (watch_probe.go), the re-list inside it after a
//     410 (watch_relist.go), which uses list.go and hands client-go only the
//     differences from what it already has (internal/reflector, handed.go),
//     and the events of other shards (shard_watch.go, shard_skips.go);
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

// pendingWatch is a streaming list's watch after its initial events: the
// reflector's next Watch from that resourceVersion continues on it, as client-go
// itself does, instead of opening a second request. It is stopped when the
// list's context ends before anyone takes it.
type pendingWatch struct {
	w       watch.Interface
	rv      string
	final   bool        // its objects are final (see leanWatch.final)
	release func() bool // stops the context.AfterFunc that would stop w
}
