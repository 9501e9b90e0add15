package resilience

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/faults"
)

// NewInformer builds the informer under test for one namespace, from a
// config that points at the fault proxy. The harness sets its watch error
// handler and runs it; the informer must not be started yet.
type NewInformer func(cfg *rest.Config, namespace string) (cache.SharedIndexInformer, error)

// Options configure Run. The zero value runs the set-up with short
// durations suitable for tests.
type Options struct {
	// GVR is the informer's resource (default ConfigMaps), and NewObject
	// builds one of its objects for the writer (default a ConfigMap with 1 KB
	// of data).
	GVR       schema.GroupVersionResource
	NewObject func(name string) *unstructured.Unstructured
	// Objects is the number of objects to keep (default 300).
	Objects int
	// WriteRate is the writer's operations per second (default 20).
	WriteRate float64
	// Settle is how long the informer runs healthy before the fault
	// (default 2 s).
	Settle time.Duration
	// FaultFor is how long the fault lasts (default 5 s).
	FaultFor time.Duration
	// ConvergeWithin bounds the wait for convergence (default 30 s).
	ConvergeWithin time.Duration
}

func (o *Options) defaults() {
	if o.GVR.Resource == "" {
		o.GVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	}
	if o.NewObject == nil {
		o.NewObject = configMap
	}
	if o.Objects == 0 {
		o.Objects = 300
	}
	if o.WriteRate == 0 {
		o.WriteRate = 20
	}
	if o.Settle == 0 {
		o.Settle = 2 * time.Second
	}
	if o.FaultFor == 0 {
		o.FaultFor = 5 * time.Second
	}
	if o.ConvergeWithin == 0 {
		o.ConvergeWithin = 30 * time.Second
	}
}

// Result is what one scenario did to one informer.
type Result struct {
	Scenario string
	// Requests is the number of the informer's requests during the fault,
	// MaxPerSecond the worst wall-clock second, ByVerb their split.
	Requests     int
	MaxPerSecond int
	ByVerb       map[faults.Verb]int
	// Converged reports whether the store held exactly the server's
	// objects (keys and resourceVersions) within ConvergeWithin, and
	// ConvergeSeconds how long that took after the fault was lifted (for a
	// DuringFault scenario, after the writer stopped, fault still on).
	Converged       bool
	ConvergeSeconds float64
	// Diff describes the store's state when convergence was given up.
	Diff string
	// Surfaced counts the errors the informer's watch error handler was
	// given, by the cause failure.Classify finds, from the fault's start to
	// the end of the run.
	Surfaced map[failure.Reason]int
	// Writes counts the writer's operations during the run, WriteErrors its
	// failures.
	Writes      map[string]int
	WriteErrors int
}

// SurfacedTotal is the number of errors the handler saw.
func (r Result) SurfacedTotal() int {
	n := 0
	for _, v := range r.Surfaced {
		n += v
	}
	return n
}

// Run seeds namespace with objects, runs the informer behind a fault proxy
// with a concurrent writer, applies sc for FaultFor, lifts it, and measures
// convergence. cfg points at the real server; namespace must exist.
func Run(ctx context.Context, cfg *rest.Config, namespace string, newInformer NewInformer, sc Scenario, o Options) (Result, error) {
	o.defaults()
	res := Result{Scenario: sc.Name, Surfaced: map[failure.Reason]int{}}

	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return res, err
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return res, err
	}
	w := newWriter(dc, o.GVR, namespace, o.NewObject, o.Objects, o.WriteRate)
	if err := w.seed(ctx); err != nil {
		return res, fmt.Errorf("seed %s in %s: %w", o.GVR.Resource, namespace, err)
	}

	p, err := faults.Start(cfg)
	if err != nil {
		return res, err
	}
	defer p.Close()

	inf, err := newInformer(p.Config(cfg), namespace)
	if err != nil {
		return res, err
	}
	var (
		mu       sync.Mutex
		counting bool
	)
	if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		mu.Lock()
		defer mu.Unlock()
		if counting {
			res.Surfaced[failure.Classify(err).Cause]++
		}
	}); err != nil {
		return res, err
	}

	runCtx, stopInformer := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopInformer()
	wg.Go(func() { inf.RunWithContext(runCtx) })
	syncCtx, cancelSync := context.WithTimeout(ctx, o.ConvergeWithin)
	synced := cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced)
	cancelSync()
	if !synced {
		return res, fmt.Errorf("informer did not sync within %s", o.ConvergeWithin)
	}

	writeCtx, stopWriter := context.WithCancel(ctx)
	var writerDone sync.WaitGroup
	writerDone.Go(func() { w.run(writeCtx) })
	stopWriting := func() { stopWriter(); writerDone.Wait() }
	defer stopWriting()

	if err := sleep(ctx, o.Settle); err != nil {
		return res, err
	}
	mu.Lock()
	counting = true
	mu.Unlock()
	p.ResetCounts()
	lift := sc.Start(p, o.GVR.Resource)
	if err := sleep(ctx, o.FaultFor); err != nil {
		lift()
		return res, err
	}
	c := p.Counts()
	res.Requests, res.MaxPerSecond, res.ByVerb = c.Requests, c.MaxPerSecond(), c.ByVerb
	stopWriting()
	if !sc.DuringFault {
		lift()
	} else {
		defer lift()
	}

	start := time.Now()
	deadline := start.Add(o.ConvergeWithin)
	for {
		server, err := serverVersions(ctx, mc, o.GVR, namespace)
		if err != nil {
			return res, fmt.Errorf("list %s: %w", o.GVR.Resource, err)
		}
		store := storeVersions(inf.GetStore())
		if m, e, s := diff(store, server); m+e+s == 0 {
			res.Converged = true
			res.ConvergeSeconds = time.Since(start).Seconds()
			break
		}
		if time.Now().After(deadline) {
			res.Diff = describeDiff(store, server)
			break
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return res, err
		}
	}
	// Errors from here on come from stopping the informer, not the fault.
	mu.Lock()
	counting = false
	mu.Unlock()
	res.Writes, res.WriteErrors, _ = w.stats()
	return res, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
