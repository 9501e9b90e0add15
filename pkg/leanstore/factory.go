package leanstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/reflector"
	"github.com/cachetune/cachetune/internal/status"
)

// core is what the three factories share: the informers keyed by K (a Go type for
// the typed factory, a resource for the others), their lifecycle, and the census,
// status and readiness over all of them.
type core[K comparable] struct {
	opts    options
	state   *reflector.StreamingState
	metrics *status.Counters // nil without WithMetrics

	mu           sync.Mutex
	informers    map[K]*Informer
	order        []K
	started      map[K]bool
	wg           sync.WaitGroup
	shuttingDown bool
}

func newCore[K comparable](resync time.Duration, opts []Option) *core[K] {
	c := &core[K]{
		opts:      newOptions(resync, opts),
		state:     &reflector.StreamingState{},
		informers: map[K]*Informer{},
		started:   map[K]bool{},
	}
	if c.opts.name == "" {
		c.opts.name = "leanstore"
	}
	m, err := newMetrics(c.opts.name, c.opts.registerer, c.all)
	if err != nil && c.opts.err == nil {
		c.opts.err = fmt.Errorf("leanstore: WithMetrics: factory %q: %w", c.opts.name, err)
	}
	c.metrics = m
	return c
}

// get returns the informer for k, creating it with build on first use.
func (c *core[K]) get(k K, build func() *Informer) *Informer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if inf, ok := c.informers[k]; ok {
		return inf
	}
	inf := build()
	c.informers[k] = inf
	c.order = append(c.order, k)
	return inf
}

func (c *core[K]) all() []*Informer {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Informer, 0, len(c.order))
	for _, k := range c.order {
		out = append(out, c.informers[k])
	}
	return out
}

// Start starts every informer created so far that is not running yet.
func (c *core[K]) Start(stopCh <-chan struct{}) {
	c.StartWithContext(wait.ContextForChannel(stopCh))
}

// StartWithContext starts every informer created so far that is not running yet;
// they stop when ctx ends.
func (c *core[K]) StartWithContext(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shuttingDown {
		return
	}
	// A shard membership (WithShard) runs from the first Start that uses it;
	// Shutdown waits for it, and for the release of its Lease.
	if sc := c.opts.shard; sc != nil && sc.Membership != nil {
		c.wg.Go(func() { sc.Membership.Run(ctx) })
	}
	for _, k := range c.order {
		if c.started[k] {
			continue
		}
		inf := c.informers[k]
		c.wg.Go(func() { inf.RunWithContext(ctx) })
		c.started[k] = true
	}
}

// Shutdown waits for every started informer to stop. Stop them first by closing
// the stop channel (or cancelling the context) given to Start.
func (c *core[K]) Shutdown() {
	c.mu.Lock()
	c.shuttingDown = true
	c.mu.Unlock()
	c.wg.Wait()
}

func (c *core[K]) startedInformers() map[K]*Informer {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[K]*Informer{}
	for k, inf := range c.informers {
		if c.started[k] {
			out[k] = inf
		}
	}
	return out
}

// waitForCacheSync waits until every started informer has synced or ctx ends.
// A factory given an invalid option returns at once, every informer false:
// its informers never list (see Informer.RunWithContext), so waiting would
// only hang until ctx ends with the reason in a log line; Err and Status say
// why.
func (c *core[K]) waitForCacheSync(ctx context.Context) map[K]bool {
	infs := c.startedInformers()
	if c.opts.err != nil {
		res := make(map[K]bool, len(infs))
		for k := range infs {
			res[k] = false
		}
		return res
	}
	checks := make([]cache.InformerSynced, 0, len(infs))
	for _, inf := range infs {
		checks = append(checks, inf.HasSynced)
	}
	cache.WaitForCacheSync(ctx.Done(), checks...)
	res := make(map[K]bool, len(infs))
	for k, inf := range infs {
		res[k] = inf.HasSynced()
	}
	return res
}

// Err returns the factory's first invalid option (an out-of-range
// WithPageSize, a WithMetrics registration that failed, ...), naming it, or
// nil. client-go's constructor signatures return no error, so a factory
// keeps it: its informers do not run, WaitForCacheSync returns false at once,
// and Check and every informer's Status report the same error.
func (c *core[K]) Err() error { return c.opts.err }

// Status reports every informer's list path, last list and failures.
func (c *core[K]) Status() []Status {
	var out []Status
	for _, inf := range c.all() {
		out = append(out, inf.Status())
	}
	return out
}

// Census counts every informer's objects and estimates the heap they hold.
func (c *core[K]) Census() []Census {
	var out []Census
	for _, inf := range c.all() {
		out = append(out, inf.Census())
	}
	return out
}

// Check is a readiness check: it fails while a started informer has not synced,
// or has failed WithDegradedAfter times in a row, and names those informers.
// A factory given an invalid option fails it with the option's error. Pass
// it to a health endpoint (profile.WithReadiness does).
func (c *core[K]) Check(context.Context) error {
	if c.opts.err != nil {
		return c.opts.err
	}
	var problems []string
	for _, inf := range c.startedInformers() {
		st := inf.Status()
		// Degraded comes first: an informer that has never synced because
		// every list fails (a missing RBAC grant) must say why.
		switch {
		case st.Degraded(c.opts.degradedAfter):
			problems = append(problems, fmt.Sprintf("%s degraded: %d failures in a row since %s, last: %s",
				inf.name, st.ConsecutiveFailures, st.FailingSince.Format(time.RFC3339), st.LastError))
		case !st.Synced && st.Shard != nil && c.opts.shard.Waiting():
			problems = append(problems, inf.name+" not synced: waiting for the shard membership"+c.opts.shard.WaitingWhy())
		case !st.Synced:
			problems = append(problems, inf.name+" not synced")
		case st.Shard != nil && st.Shard.Rebalancing:
			// After a ring change the informer holds objects that are now
			// another replica's, and lacks some that are now its own.
			problems = append(problems, fmt.Sprintf("%s rebalancing: the shard ring changed at %s and the informer has not yet taken its part",
				inf.name, st.Shard.RebalancingSince.Format(time.RFC3339)))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	return fmt.Errorf("%s", strings.Join(problems, "; "))
}

// genericInformer is informers.GenericInformer over a leanstore Informer.
type genericInformer struct {
	informer *Informer
	resource schema.GroupResource
}

var _ informers.GenericInformer = genericInformer{}

func (g genericInformer) Informer() cache.SharedIndexInformer { return g.informer }

func (g genericInformer) Lister() cache.GenericLister {
	return cache.NewGenericLister(g.informer.GetIndexer(), g.resource)
}
