package doctor

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/internal/cluster"
)

// clients are the clients the doctor reads with.
type clients struct {
	cs       kubernetes.Interface
	dyn      dynamic.Interface
	meta     metadata.Interface
	disc     discovery.DiscoveryInterface
	lister   *lister
	progress io.Writer
}

// Run examines the resources of the cluster cfg reaches and returns the
// report. A resource the identity may not list is reported as such, not as an
// error; Run fails only for an invalid option (ErrOption), an unreachable
// cluster, or a failed discovery.
func Run(ctx context.Context, cfg *rest.Config, opts ...Option) (*Report, error) {
	o, err := build(opts)
	if err != nil {
		return nil, err
	}
	if err := cluster.Reachable(ctx, cfg); err != nil {
		return nil, err
	}
	c, err := newClients(cfg, o)
	if err != nil {
		return nil, err
	}
	r := &Report{
		Schema: Schema, Generated: time.Now().UTC().Truncate(time.Second),
		Cluster: Cluster{Host: cfg.Host}, Namespace: o.namespace,
		Settings: Settings{Sample: o.sample, PageSize: o.pageSize, StuckAfterSeconds: o.stuckAfter.Seconds()},
	}
	if v, err := c.disc.ServerVersion(); err == nil {
		r.Cluster.ServerVersion = v.GitVersion
	}
	lists, err := c.disc.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discover the resources the cluster serves: %w", err)
	}
	targets, err := resolve(o.resources, served(lists), o.namespace)
	if err != nil {
		return nil, err
	}

	for _, t := range targets {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r.Resources = append(r.Resources, c.examine(ctx, t, o))
	}
	r.StreamingLists = c.streaming(ctx, targets, r.Resources, o.namespace)
	if o.watch > 0 {
		window, loop, turns := churnSettings(o.watch)
		r.Settings.WatchSeconds, r.Settings.ChurnWindowSeconds = o.watch.Seconds(), window.Seconds()
		r.Settings.LoopThreshold, r.Settings.PingPongTurns = loop, turns
		c.watchAll(ctx, targets, r.Resources, o)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	r.Recommendations = recommend(r)
	return r, nil
}

func newClients(cfg *rest.Config, o options) (*clients, error) {
	c := &clients{progress: o.progress}
	// Deprecation warnings of the resources read (v1 Endpoints, ...) would
	// interleave with the progress lines; the doctor only reads.
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NoWarnings{}
	var err error
	if c.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.meta, err = metadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.disc, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
		return nil, err
	}
	if c.lister, err = newLister(cfg, o.pageSize); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *clients) say(format string, args ...any) {
	fmt.Fprintf(c.progress, format+"\n", args...)
}

// examine checks access to one resource and, if it may be listed, measures
// it: sizes from JSON, a sample decoded in the informer's format, the LIST's
// latency, projections and stuck objects.
func (c *clients) examine(ctx context.Context, t target, o options) Resource {
	r := Resource{
		Resource: t.name(), Group: t.gvr.Group, Version: t.gvr.Version, Kind: t.kind,
		Namespaced: t.namespaced, BuiltIn: t.builtIn,
	}
	where := scope(t, o.namespace)
	a, checked := access(ctx, c.cs, t, o.namespace)
	r.Access = a
	if checked && !a.List {
		r.Error = fmt.Sprintf("forbidden: may not list %s in %s", t.name(), where)
		c.say("%s: FORBIDDEN: may not list in %s (%s)", t.name(), where, a.Reason)
		return r
	}
	if checked && !a.Watch {
		c.say("%s: may list but not watch in %s: an informer would fail (%s)", t.name(), where, a.Reason)
	}

	c.say("%s: listing in %s...", t.name(), where)
	var sz sizes
	smp := newSampler(o.sample)
	var pb protobufSizes
	var err error
	if t.builtIn {
		r.List, err = c.lister.list(ctx, t, o.namespace, formatProtobuf, func(raw []byte) (string, error) {
			return protobufPage(raw, &pb, smp)
		})
		if err == nil {
			_, err = c.lister.list(ctx, t, o.namespace, formatJSON, func(raw []byte) (string, error) {
				return jsonSizesPage(raw, &sz)
			})
		}
	} else {
		r.List, err = c.lister.list(ctx, t, o.namespace, formatJSON, func(raw []byte) (string, error) {
			return jsonSamplePage(raw, &sz, smp, t.gvr.GroupVersion().WithKind(t.kind))
		})
	}
	if err != nil {
		if !checked && apierrors.IsForbidden(err) {
			r.Access.Reason = err.Error()
			r.Error = fmt.Sprintf("forbidden: may not list %s in %s", t.name(), where)
		} else {
			r.Error = err.Error()
		}
		c.say("%s: %s", t.name(), r.Error)
		return r
	}
	if !checked {
		r.Access.List = true // the list worked; watch stays unknown (false)
	}
	sz.fill(&r)
	if t.builtIn {
		r.Protobuf = &Bytes{Total: pb.total}
		if pb.objects > 0 {
			r.Protobuf.PerObject = float64(pb.total) / float64(pb.objects)
		}
	}
	c.say("%s: %d objects, %.1f KB JSON per object; LIST in %s: first page %s, all %s in %s",
		t.name(), r.Objects, r.JSON.PerObject/1000, r.List.Format, seconds(r.List.FirstPageSeconds), plural(r.List.Pages, "page"), seconds(r.List.AllSeconds))

	r.Sampled = len(smp.objs)
	r.Projections, err = project(smp.objs, t.builtIn, r.Objects, sz.meanKey())
	smp.objs = nil
	if err != nil {
		r.Error = fmt.Sprintf("project the cache of %s: %v", t.name(), err)
	}
	// Give back what the sample and the pages took before the next resource.
	debug.FreeOSMemory()

	if r.Stuck, err = stuck(ctx, c.meta, t, o.namespace, o.stuckAfter); err != nil {
		r.Error = fmt.Sprintf("look for stuck objects: %v", err)
	}
	if len(r.Stuck) > 0 {
		c.say("%s: %d objects Terminating for more than %s", t.name(), len(r.Stuck), o.stuckAfter)
	}
	return r
}

// readable reports whether r was listed.
func readable(r Resource) bool { return r.List.Pages > 0 }

// streaming tries a streaming list on the smallest resource the identity may
// watch.
func (c *clients) streaming(ctx context.Context, targets []target, res []Resource, namespace string) Streaming {
	best := -1
	for i, r := range res {
		if !readable(r) || !r.Access.Watch {
			continue
		}
		if best < 0 || r.Objects < res[best].Objects {
			best = i
		}
	}
	if best < 0 {
		return Streaming{Supported: Unknown, Detail: "no resource the identity may list and watch to try it on"}
	}
	c.say("streaming lists: trying a watch with sendInitialEvents on %s...", targets[best].name())
	s := streamingLists(ctx, c.meta, targets[best], namespace)
	c.say("streaming lists: %s (%s)", s.Supported, s.Detail)
	return s
}

// watchAll watches every resource the identity may watch, all at once, for
// the watch duration.
func (c *clients) watchAll(ctx context.Context, targets []target, res []Resource, o options) {
	var idx []int
	for i, r := range res {
		if readable(r) && r.Access.Watch {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	names := make([]string, len(idx))
	for j, i := range idx {
		names[j] = targets[i].name()
	}
	c.say("watching %v for %s, for reconcile loops and ping-pong...", names, o.watch)
	var wg sync.WaitGroup
	for _, i := range idx {
		wg.Go(func() { res[i].Churn = churn(ctx, c.dyn, targets[i], o.namespace, o.watch) })
	}
	wg.Wait()
	for _, i := range idx {
		if n := len(res[i].Churn.Findings); n > 0 {
			c.say("%s: %d churn findings", targets[i].name(), n)
		}
	}
}

func seconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}
