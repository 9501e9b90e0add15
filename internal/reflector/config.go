package reflector

import (
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cachetune/cachetune/internal/shrink"
	"github.com/cachetune/cachetune/pkg/backoff"
)

// Config is what a ListWatch needs of its informer: leanstore builds it from
// its options and the informer's resource.
type Config struct {
	// Resource is the informer's group and resource, for errors and the
	// shrink pipeline; it may change once the source has resolved it.
	Resource func() schema.GroupResource
	// Example is an empty object of the informer's type, for bookmarks.
	Example runtime.Object

	// Source makes the requests. Raw, when not nil, is Source as a source of
	// raw protobuf responses, which the lean decoder reads (internal/wire).
	Source Source
	Raw    RawSource
	// ListOptions applies the informer's scope (selectors, the caller's
	// tweak) to one request's options; nil leaves them as they are.
	ListOptions func(metav1.ListOptions) metav1.ListOptions

	// PageSize is a paged LIST's page size (0: the server's choice).
	PageSize int64
	// IdleTimeout ends a watch silent for longer; 0 never does.
	IdleTimeout time.Duration
	// HeapBound bounds the heap during a list (see Pacer); 0 is off.
	HeapBound float64
	// Streaming is the informer's streaming mode, StreamingWhy the reason
	// when it differs from the one asked for; Refusals is what the
	// informer's factory knows of the server's refusals, shared by its
	// informers.
	Streaming    StreamingMode
	StreamingWhy string
	Refusals     *StreamingState

	// Strip is the informer's shrink pipeline: what is done to each
	// decoded object.
	Strip *shrink.Pipeline
	// Shard drops the objects of other shards; nil keeps every object.
	Shard Shard
	// Handed is the informer's record of what the reflector has been
	// handed (see Handed), set up by the caller (Compact, MovedOut,
	// Placeholder); nil starts an empty one.
	Handed *Handed

	// Backoff paces failed lists and watch starts; Reporter is told every
	// failure and success, and Logger logs what the loop decides.
	Backoff  backoff.Backoff
	Reporter Reporter
	Logger   logr.Logger
}

// listOptions applies the informer's scope to a request's options.
func (c *Config) listOptions(opts metav1.ListOptions) metav1.ListOptions {
	if c.ListOptions == nil {
		return opts
	}
	return c.ListOptions(opts)
}
