package leancache

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/cachetune/cachetune/pkg/leanstore"
)

func (c *Cache) add(inf *informer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := inf.Name()
	if _, ok := c.informers[name]; !ok {
		c.order = append(c.order, name)
	}
	c.informers[name] = inf
}

// remove forgets inf once it has stopped, unless an informer of the same name
// has taken its place.
func (c *Cache) remove(inf *informer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := inf.Name()
	if c.informers[name] != inf {
		return
	}
	delete(c.informers, name)
	c.order = slices.DeleteFunc(c.order, func(n string) bool { return n == name })
}

func (c *Cache) all() []*informer {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*informer, 0, len(c.order))
	for _, n := range c.order {
		out = append(out, c.informers[n])
	}
	return out
}

// Informers returns the leanstore informers of the cache in creation order:
// every informer created and not stopped.
func (c *Cache) Informers() []*leanstore.Informer {
	var out []*leanstore.Informer
	for _, inf := range c.all() {
		out = append(out, inf.Informer)
	}
	return out
}

// Status reports every informer's list path, last list and failures.
func (c *Cache) Status() []leanstore.Status {
	var out []leanstore.Status
	for _, inf := range c.all() {
		out = append(out, inf.Status())
	}
	return out
}

// Census counts every informer's objects and estimates the heap they hold.
func (c *Cache) Census() []leanstore.Census {
	var out []leanstore.Census
	for _, inf := range c.all() {
		out = append(out, inf.Census())
	}
	return out
}

// Check is a readiness check: it fails while a started informer has not
// synced, or has failed DegradedAfter times in a row, and names those
// informers. Informers created but not started yet do not count.
func (c *Cache) Check(context.Context) error {
	var problems []string
	for _, inf := range c.all() {
		if !inf.isStarted() {
			continue
		}
		st := inf.Status()
		switch {
		case st.Degraded(c.opts.DegradedAfter):
			problems = append(problems, fmt.Sprintf("%s degraded: %d failures in a row since %s, last: %s",
				st.Informer, st.ConsecutiveFailures, st.FailingSince.Format(time.RFC3339), st.LastError))
		case !st.Synced:
			problems = append(problems, st.Informer+" not synced")
		}
	}
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	return fmt.Errorf("%s", strings.Join(problems, "; "))
}

// Checker is Check as a controller-runtime health check, for
// mgr.AddReadyzCheck.
func (c *Cache) Checker() healthz.Checker {
	return func(req *http.Request) error { return c.Check(req.Context()) }
}

// Unwrap returns the leanstore Informer behind an informer of a Cache's cache
// (what mgr.GetCache().GetInformer returns), or nil when it is not one. With
// DefaultNamespaces or per-object Namespaces, controller-runtime returns an
// informer of its own over one informer per namespace, and Unwrap returns nil:
// find those in Informers or Status, named NAME@NAMESPACE/RESOURCE.
func Unwrap(inf any) *leanstore.Informer {
	switch i := inf.(type) {
	case *informer:
		return i.Informer
	case toolscache.SharedIndexInformer:
		return leanstore.Unwrap(i)
	}
	return nil
}
