package resilience

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/backoff"
	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
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
	// Restricted is the identity of a NoGrant scenario: authenticated, with
	// no RBAC grant (apiserver's RestrictedConfig). It must authenticate
	// with a bearer token to pass through the proxy.
	Restricted *rest.Config
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
	// Faulted is the number of those requests a fault acted on, plus the
	// live watches the scenario ended when it started. A client that
	// reports every failure surfaces at least that many errors (client-go's
	// rest client retrying a 429 inside one call aside).
	Faulted int
	// FaultWindow is the time the counts above cover: from the fault's
	// start to when they were read. It is at least FaultFor, and longer on a
	// loaded machine: bounds derived from a backoff take this, not
	// FaultFor, since a client's waits are lower bounds that load only
	// stretches.
	FaultWindow time.Duration
	// Probes is the number of Requests that were probes: lists of one
	// object, which leanstore sends about once a second while it backs off.
	Probes int
	// RecoveryRequests is the number of the informer's requests from the
	// lift of the fault to convergence and the informer's reported recovery
	// (or to giving up on either), and
	// MaxPerSecondThrough the worst wall-clock second from the fault's start
	// to then: the rate the informer held through the whole episode, its
	// recovery included.
	RecoveryRequests    int
	MaxPerSecondThrough int
	// Converged reports whether the store held exactly the server's
	// objects (keys and resourceVersions) within ConvergeWithin, and
	// ConvergeSeconds how long that took after the fault was lifted (for a
	// DuringFault scenario, with the connections it stalled still hanging;
	// for NoGrant, after the grant took effect: once the server's authorizer
	// allowed the identity to list and watch).
	Converged       bool
	ConvergeSeconds float64
	// RecoverySeconds is how long after convergence the informer took to
	// report its recovery (see awaitRecovery), or -1 when it had not within
	// ConvergeWithin: FinalStatus and FinalReadiness then say what it
	// still reported.
	RecoverySeconds float64
	// Diff describes the store's state when convergence was given up.
	Diff string
	// PerSecond is the informer's requests in each wall-clock second of the
	// fault.
	PerSecond []int
	// Surfaced counts the errors the informer's watch error handler was
	// given, by the cause failure.Classify finds, from the fault's start to
	// the end of the run; Errors holds the first maxErrors of them with
	// when they came.
	Surfaced map[failure.Reason]int
	Errors   []Surfaced
	// HasReadiness says whether the informer has a readiness check
	// (FactoryInformer); FaultReadiness and FinalReadiness are its error at
	// the end of the fault and at the end of the run, "" when ready.
	HasReadiness                   bool
	FaultReadiness, FinalReadiness string
	// FaultStatus and FinalStatus are a leanstore informer's Status at the
	// end of the fault and at the end of the run; nil for other informers.
	FaultStatus, FinalStatus *leanstore.Status
	// Writes counts the writer's operations during the run, WriteErrors its
	// failures.
	Writes      map[string]int
	WriteErrors int
}

// Surfaced is one error given to the informer's watch error handler.
type Surfaced struct {
	// At is how long after the fault started it came.
	At  time.Duration
	Err error
}

// maxErrors bounds Result.Errors: a client that reports in a tight loop
// would otherwise fill the heap.
const maxErrors = 1000

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
//
// A NoGrant scenario runs the informer as o.Restricted from the start
// (every request 403, so it never syncs during the fault) and lifts the
// fault by granting that identity list and watch in the namespace.
func Run(ctx context.Context, cfg *rest.Config, namespace string, newInformer NewInformer, sc Scenario, o Options) (Result, error) {
	o.defaults()
	res := Result{Scenario: sc.Name, Surfaced: map[failure.Reason]int{}}
	if sc.NoGrant && o.Restricted == nil {
		return res, fmt.Errorf("scenario %s needs Options.Restricted", sc.Name)
	}

	w, mc, err := seed(ctx, cfg, namespace, o)
	if err != nil {
		return res, err
	}
	p, err := faults.Start(cfg)
	if err != nil {
		return res, err
	}
	defer p.Close()

	identity := cfg
	if sc.NoGrant {
		identity = o.Restricted
	}
	var probes atomic.Int64
	inf, errs, err := newCountedInformer(newInformer, countingProbes(p.Config(identity), &probes), namespace)
	if err != nil {
		return res, err
	}
	startFault := func() {
		errs.start()
		// Probes are counted as they are sent, requests as they arrive:
		// zeroed before the reset and read after the counts, a probe at
		// either edge counts as a probe rather than as a costly request.
		probes.Store(0)
		p.ResetCounts()
	}

	var lift func()
	if sc.NoGrant {
		startFault()
		lift = func() {}
	}
	runCtx, stopInformer := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopInformer()
	wg.Go(func() { inf.RunWithContext(runCtx) })
	if !sc.NoGrant {
		if err := waitSynced(ctx, inf, o.ConvergeWithin); err != nil {
			return res, err
		}
	}

	stopWriting := startWriter(ctx, w)
	defer stopWriting()

	if !sc.NoGrant {
		if err := backoff.Sleep(ctx, o.Settle); err != nil {
			return res, err
		}
		startFault()
		lift = sc.Start(p, o.GVR.Resource)
	}
	if err := backoff.Sleep(ctx, o.FaultFor); err != nil {
		lift()
		return res, err
	}
	recordFault(ctx, p, &probes, inf, &res)
	stopWriting()
	lift()
	if sc.NoGrant {
		grantCtx, cancel := context.WithTimeout(ctx, o.ConvergeWithin)
		err := grant(grantCtx, cfg, namespace, o.GVR, o.Restricted)
		cancel()
		if err != nil {
			return res, err
		}
	}

	if err := converge(ctx, mc, o, namespace, inf, &res); err != nil {
		return res, err
	}
	if res.Converged {
		within := o.ConvergeWithin - time.Duration(res.ConvergeSeconds*float64(time.Second))
		took, err := awaitRecovery(ctx, inf, within)
		if err != nil {
			return res, err
		}
		res.RecoverySeconds = took.Seconds()
		if took < 0 {
			res.RecoverySeconds = -1
		}
	}
	through := p.Counts()
	res.RecoveryRequests, res.MaxPerSecondThrough = through.Requests-res.Requests, through.MaxPerSecond()
	// Errors from here on come from stopping the informer, not the fault.
	res.Surfaced, res.Errors = errs.stop()
	_, res.FinalReadiness = readiness(ctx, inf)
	res.FinalStatus = status(inf)
	res.Writes, res.WriteErrors, _ = w.stats()
	return res, nil
}

// seed creates o.Objects objects in namespace and returns the writer that
// keeps changing them, and a metadata client to list them with.
func seed(ctx context.Context, cfg *rest.Config, namespace string, o Options) (*writer, metadata.Interface, error) {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	w := newWriter(dc, o.GVR, namespace, o.NewObject, o.Objects, o.WriteRate)
	if err := w.seed(ctx); err != nil {
		return nil, nil, fmt.Errorf("seed %s in %s: %w", o.GVR.Resource, namespace, err)
	}
	return w, mc, nil
}

// newCountedInformer builds the informer and counts, in the returned
// surfacedErrors, what its watch-error handler hears. They become the
// result's once counting has stopped: the informer outlives an early return.
func newCountedInformer(newInformer NewInformer, cfg *rest.Config, namespace string) (cache.SharedIndexInformer, *surfacedErrors, error) {
	inf, err := newInformer(cfg, namespace)
	if err != nil {
		return nil, nil, err
	}
	errs := &surfacedErrors{surfaced: map[failure.Reason]int{}}
	if err := inf.SetWatchErrorHandlerWithContext(errs.handle); err != nil {
		return nil, nil, err
	}
	return inf, errs, nil
}

// countingProbes returns cfg with a transport that counts the probes
// (isProbe) of every client built from it into n.
func countingProbes(cfg *rest.Config, n *atomic.Int64) *rest.Config {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return probeCounter{next: rt, probes: n} })
	return cfg
}

// startWriter runs w until the returned stop is called, which waits for it;
// calling stop again does nothing more.
func startWriter(ctx context.Context, w *writer) (stop func()) {
	writeCtx, cancel := context.WithCancel(ctx)
	var done sync.WaitGroup
	done.Go(func() { w.run(writeCtx) })
	return func() { cancel(); done.Wait() }
}

// waitSynced waits up to within for inf to sync.
func waitSynced(ctx context.Context, inf cache.SharedIndexInformer, within time.Duration) error {
	syncCtx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		return fmt.Errorf("informer did not sync within %s", within)
	}
	return nil
}

// recordFault records, at the end of the fault, the requests the proxy saw,
// the probes among them and the time they cover, and the informer's
// readiness and status.
func recordFault(ctx context.Context, p *faults.Proxy, probes *atomic.Int64, inf cache.SharedIndexInformer, res *Result) {
	c := p.Counts()
	res.Probes = int(probes.Load())
	res.FaultWindow = time.Since(c.Since)
	res.Requests, res.MaxPerSecond, res.ByVerb, res.PerSecond, res.Faulted = c.Requests, c.MaxPerSecond(), c.ByVerb, c.PerSecond, c.Faulted
	res.HasReadiness, res.FaultReadiness = readiness(ctx, inf)
	res.FaultStatus = status(inf)
}

// converge compares the informer's store with the server's list every 100 ms
// until they agree (res.Converged, res.ConvergeSeconds) or
// o.ConvergeWithin has passed (res.Diff says what still differs).
func converge(ctx context.Context, mc metadata.Interface, o Options, namespace string, inf cache.SharedIndexInformer, res *Result) error {
	start := time.Now()
	deadline := start.Add(o.ConvergeWithin)
	for {
		server, err := serverVersions(ctx, mc, o.GVR, namespace)
		if err != nil {
			return fmt.Errorf("list %s: %w", o.GVR.Resource, err)
		}
		store := storeVersions(inf.GetStore())
		if m, e, s := diff(store, server); m+e+s == 0 {
			res.Converged = true
			res.ConvergeSeconds = time.Since(start).Seconds()
			return nil
		}
		if time.Now().After(deadline) {
			res.Diff = describeDiff(store, server)
			return nil
		}
		if err := backoff.Sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// awaitRecovery waits, up to within, until a converged informer reports its
// recovery (a leanstore informer's ConsecutiveFailures back to 0 and its
// readiness check passing): the store can hold the server's objects as soon
// as the fault is lifted, when nothing changed during it, while the attempt
// that met the fault's last moment is still waiting to be retried. It
// returns how long the wait took, or -1 when it gave up at within. Informers
// without a Status or a readiness check return at once.
func awaitRecovery(ctx context.Context, inf cache.SharedIndexInformer, within time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		if st := status(inf); st == nil || st.ConsecutiveFailures == 0 {
			if _, problem := readiness(ctx, inf); problem == "" {
				return time.Since(start), nil
			}
		}
		if time.Since(start) > within {
			return -1, nil
		}
		if err := backoff.Sleep(ctx, 100*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// surfacedErrors counts the errors the informer's watch-error handler hears
// between start and stop: those surfaced by the fault.
type surfacedErrors struct {
	mu         sync.Mutex
	counting   bool
	faultStart time.Time
	surfaced   map[failure.Reason]int
	errs       []Surfaced
}

func (s *surfacedErrors) handle(_ context.Context, _ *cache.Reflector, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counting {
		s.surfaced[failure.Classify(err).Cause]++
		if len(s.errs) < maxErrors {
			s.errs = append(s.errs, Surfaced{At: time.Since(s.faultStart), Err: err})
		}
	}
}

func (s *surfacedErrors) start() {
	s.mu.Lock()
	s.counting, s.faultStart = true, time.Now()
	s.mu.Unlock()
}

// stop ends counting and returns the counts by cause and the first errors.
func (s *surfacedErrors) stop() (map[failure.Reason]int, []Surfaced) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counting = false
	return s.surfaced, s.errs
}

// readiness runs the informer's readiness check, when it has one.
func readiness(ctx context.Context, inf cache.SharedIndexInformer) (has bool, problem string) {
	c, ok := inf.(interface{ Check(context.Context) error })
	if !ok {
		return false, ""
	}
	if err := c.Check(ctx); err != nil {
		return true, err.Error()
	}
	return true, ""
}

// status is a leanstore informer's Status, nil for any other informer.
func status(inf cache.SharedIndexInformer) *leanstore.Status {
	li := leanstore.Unwrap(inf)
	if f, ok := inf.(*FactoryInformer); ok {
		li = f.Informer
	}
	if li == nil {
		return nil
	}
	st := li.Status()
	return &st
}
