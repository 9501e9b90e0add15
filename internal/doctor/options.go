package doctor

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Option configures Run.
type Option func(*options)

type options struct {
	resources  []string
	namespace  string
	sample     int
	pageSize   int64
	watch      time.Duration
	stuckAfter time.Duration
	progress   io.Writer
}

// DefaultResources are what Run examines unless told otherwise: the kinds whose
// caches most often dominate a controller's heap.
var DefaultResources = []string{"pods", "configmaps", "secrets"}

// defaults are every default of the package, in one place.
func defaults() options {
	return options{
		resources:  DefaultResources,
		sample:     200,
		pageSize:   500,
		stuckAfter: 10 * time.Minute,
		progress:   io.Discard,
	}
}

// ErrOption marks an invalid option: a caller's mistake, not the cluster's.
var ErrOption = errors.New("invalid option")

// Validate checks opts as Run would, without a cluster: a command line can
// be rejected before a kubeconfig is even read. The error wraps ErrOption.
func Validate(opts ...Option) error {
	_, err := build(opts)
	return err
}

func build(opts []Option) (options, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case len(o.resources) == 0:
		return o, fmt.Errorf("%w: no resources to examine", ErrOption)
	case o.sample < 1:
		return o, fmt.Errorf("%w: the sample must hold at least 1 object, got %d", ErrOption, o.sample)
	case o.pageSize < 1:
		return o, fmt.Errorf("%w: the page size must be at least 1, got %d", ErrOption, o.pageSize)
	case o.watch < 0:
		return o, fmt.Errorf("%w: the watch duration must not be negative, got %s", ErrOption, o.watch)
	case o.stuckAfter < 0:
		return o, fmt.Errorf("%w: the stuck-Terminating threshold must not be negative, got %s", ErrOption, o.stuckAfter)
	}
	for _, r := range o.resources {
		if strings.TrimSpace(r) == "" {
			return o, fmt.Errorf("%w: an empty resource name", ErrOption)
		}
	}
	return o, nil
}

// WithResources names the resources to examine: plural names ("pods"),
// group-qualified ones ("deployments.apps"), kinds or short names, as kubectl
// takes them, or "all" for every resource the server serves that can be listed
// and watched. The default is DefaultResources.
func WithResources(names ...string) Option {
	return func(o *options) { o.resources = names }
}

// WithNamespace limits namespaced resources to one namespace (default: all
// namespaces). Cluster-scoped resources are read whole.
func WithNamespace(ns string) Option { return func(o *options) { o.namespace = ns } }

// WithSample sets how many objects of each resource are decoded to project
// cache sizes (default 200), chosen evenly at random from the whole list.
func WithSample(n int) Option { return func(o *options) { o.sample = n } }

// WithPageSize sets the objects per page of every LIST (default 500, as
// client-go's pager).
func WithPageSize(n int64) Option { return func(o *options) { o.pageSize = n } }

// WithWatch watches every resource the identity may watch for d, feeding a
// churn detector to find reconcile loops and ping-pong (default 0: no watch).
func WithWatch(d time.Duration) Option { return func(o *options) { o.watch = d } }

// WithStuckAfter reports objects Terminating for longer than d (default 10
// minutes).
func WithStuckAfter(d time.Duration) Option { return func(o *options) { o.stuckAfter = d } }

// WithProgress writes a line per step to w (default: nowhere), for a terminal.
func WithProgress(w io.Writer) Option { return func(o *options) { o.progress = w } }
