package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

// Config is what Run needs. Server and Flavors are required; zero fields of
// the rest take the defaults in the comments.
type Config struct {
	// Server is the API server, with a bearer-token identity allowed to do
	// everything (the fault proxy passes the client's token through).
	Server *rest.Config
	// Flavors are the informers to compare (DefaultFlavors).
	Flavors []Flavor
	// Steps is the number of steps of a program (6).
	Steps int
	// InitialPods is the number of Pods created before the informers start (24).
	InitialPods int
	// MaxWrites bounds the writes of one step (12).
	MaxWrites int
	// Faults restricts the catalog to these names; empty means every fault.
	Faults []string
	// StepTimeout bounds the wait for leanstore's informers to converge after
	// a step (15 s; IdleTimeout more after a fault detected by a time-out).
	// It must stay below twice IdleTimeout: a stale cache heals itself then.
	StepTimeout time.Duration
	// OracleTimeout bounds the wait for client-go's informers to converge at
	// the end (90 s: client-go's backoff grows to 30 s, jitter doubles it).
	// They are not waited for after each step.
	OracleTimeout time.Duration
	// PerItemProcessing turns client-go's InOrderInformersBatchProcess
	// feature off for the run's informers: the FIFO's consumer then updates
	// the indexer one event at a time, as client-go did before v0.35, and a
	// re-list that compares with the indexer sees it half-way.
	PerItemProcessing bool
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

func (c *Config) defaults() {
	if c.Steps == 0 {
		c.Steps = 6
	}
	if c.InitialPods == 0 {
		c.InitialPods = 24
	}
	if c.MaxWrites == 0 {
		c.MaxWrites = 12
	}
	if c.StepTimeout == 0 {
		c.StepTimeout = 15 * time.Second
	}
	if c.OracleTimeout == 0 {
		c.OracleTimeout = 90 * time.Second
	}
	if c.Flavors == nil {
		c.Flavors = DefaultFlavors()
	}
	if c.Log == nil {
		c.Log = func(string, ...any) {}
	}
}

// Result is what one program did and found.
type Result struct {
	Seed uint64
	// Faults are the faults of the steps, in order.
	Faults []string
	// Writes counts the writes made.
	Writes int
	// Failures are the broken checks; empty means the run passed.
	Failures []string
	// Impaired lists the client-go informers that a fault left unable to
	// converge, by design, with the step and reason.
	Impaired []string
	// Log is the writer's log of every write, for replaying by eye.
	Log      []string
	Duration time.Duration
}

// Failed reports whether any check failed.
func (r Result) Failed() bool { return len(r.Failures) > 0 }

var runSeq atomic.Int64

// Run runs the program of seed against every flavor at once and checks them.
// An error means the run itself could not be carried out (the server is not
// there); broken checks are in the Result.
func Run(ctx context.Context, cfg Config, seed uint64) (Result, error) {
	cfg.defaults()
	start := time.Now()
	res := Result{Seed: seed}
	rnd := rand.New(rand.NewPCG(seed, 0x5eed))
	catalog, err := catalogOf(cfg.Faults)
	if err != nil {
		return res, err
	}

	admin, err := kubernetes.NewForConfig(cfg.Server)
	if err != nil {
		return res, err
	}
	run := fmt.Sprintf("s%d-%d-%d", seed, time.Now().UnixNano()%100000, runSeq.Add(1))
	w := newWriter(admin, run, seed)
	defer func() { res.Log = w.log }()
	if err := w.setup(ctx, cfg.InitialPods); err != nil {
		return res, err
	}
	proxy, err := faults.Start(cfg.Server)
	if err != nil {
		return res, err
	}
	defer proxy.Close()

	selector := runLabel + "=" + run
	subjects, err := newSubjects(cfg.Flavors, proxy.Config(cfg.Server), selector)
	if err != nil {
		return res, err
	}
	var gates map[clientfeatures.Feature]bool
	if cfg.PerItemProcessing {
		gates = map[clientfeatures.Feature]bool{clientfeatures.InOrderInformersBatchProcess: false}
	}
	restoreGates := withGates(gates)
	defer restoreGates()
	stop := startSubjects(ctx, subjects)
	defer stop()
	res.Failures = append(res.Failures, waitSynced(ctx, subjects, cfg.OracleTimeout)...)
	if res.Failed() {
		return res, nil
	}
	// check waits for the informers to hold the truth: leanstore's after
	// every step, client-go's (the oracle) only at the end, since its backoff
	// cannot be shortened and would make every step wait for it.
	check := func(step string, timeout time.Duration, oracles bool) {
		res.Failures = append(res.Failures, checkTruth(ctx, cfg, admin, selector, subjects, seed, step, timeout, oracles)...)
	}
	check("after the initial sync", cfg.OracleTimeout, true)
	var stickies []func()
	defer func() {
		for _, lift := range stickies {
			lift()
		}
	}()
	for i := range cfg.Steps {
		f := catalog[rnd.IntN(len(catalog))]
		res.Faults = append(res.Faults, f.Name)
		step := fmt.Sprintf("step %d (%s)", i+1, f.Name)
		cfg.Log("seed %d %s", seed, step)
		w.logf("-- %s", step)
		n, err := holdFault(ctx, w, proxy, subjects, f, rnd, cfg.MaxWrites, &stickies)
		res.Writes += n
		if err != nil {
			return res, fmt.Errorf("%s: %w", step, err)
		}
		res.Impaired = append(res.Impaired, markImpaired(f, step, subjects)...)
		check(step, stepTimeout(cfg, f), false)
	}
	if err := w.releaseAll(ctx); err != nil {
		return res, err
	}
	check("at the end", cfg.OracleTimeout, true)
	stop()
	res.Failures = append(res.Failures, violations(subjects)...)
	res.Duration = time.Since(start)
	return res, nil
}

// startSubjects runs every subject's informer and resourceVersion recorder
// until the returned stop is called, which waits for them.
func startSubjects(ctx context.Context, subjects []*subject) (stop func()) {
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, s := range subjects {
		wg.Go(func() { s.run(runCtx) })
		wg.Go(func() { s.rv.run(runCtx, s.inf) })
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// checkTruth lists the truth and waits up to timeout for the subjects to
// hold it (the oracles too when oracles is set), returning what failed.
func checkTruth(ctx context.Context, cfg Config, admin kubernetes.Interface, selector string, subjects []*subject, seed uint64, step string, timeout time.Duration, oracles bool) []string {
	truth, err := truthOf(ctx, admin, selector)
	if err != nil {
		return []string{fmt.Sprintf("%s: the truth: %v", step, err)}
	}
	var checked []*subject
	for _, s := range subjects {
		if oracles || !s.flavor.Oracle() {
			checked = append(checked, s)
		}
	}
	t0 := time.Now()
	fails, slowest := converge(ctx, checked, truth, step, timeout)
	cfg.Log("seed %d %s: %d objects, converged in %s (slowest %s)", seed, step, len(truth), time.Since(t0).Round(10*time.Millisecond), slowest)
	return fails
}

// catalogOf returns the faults named (every fault when none is), or an error
// when no fault has any of the names.
func catalogOf(names []string) ([]Fault, error) {
	if len(names) == 0 {
		return Faults, nil
	}
	var catalog []Fault
	for _, f := range Faults {
		for _, name := range names {
			if f.Name == name {
				catalog = append(catalog, f)
			}
		}
	}
	if len(catalog) == 0 {
		return nil, fmt.Errorf("no fault named %v (the catalog: %v)", names, FaultNames())
	}
	return catalog, nil
}

// newSubjects builds one subject per flavor, each through cfg (the proxy's).
func newSubjects(flavors []Flavor, cfg *rest.Config, selector string) ([]*subject, error) {
	subjects := make([]*subject, 0, len(flavors))
	for _, f := range flavors {
		s, err := newSubject(f, cfg, selector)
		if err != nil {
			return nil, fmt.Errorf("flavor %s: %w", f, err)
		}
		subjects = append(subjects, s)
	}
	return subjects, nil
}

// waitSynced waits up to timeout for every subject to sync and names those
// that did not.
func waitSynced(ctx context.Context, subjects []*subject, timeout time.Duration) []string {
	syncCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var failures []string
	for _, s := range subjects {
		if !cache.WaitForCacheSync(syncCtx.Done(), s.inf.HasSynced) {
			failures = append(failures, fmt.Sprintf("%s did not sync within %s", s.flavor, timeout))
		}
	}
	return failures
}

// holdFault applies f, makes the step's writes under it, holds it a while
// and lifts it, unless it is sticky: a sticky fault's lift joins stickies,
// for the end of the run. It returns how many writes succeeded.
func holdFault(ctx context.Context, w *writer, proxy *faults.Proxy, subjects []*subject, f Fault, rnd *rand.Rand, maxWrites int, stickies *[]func()) (int, error) {
	lift := f.apply(proxy, rnd)
	if f.sticky {
		*stickies = append(*stickies, lift)
		lift = func() {}
	}
	defer lift()
	n, err := stepWrites(ctx, w, proxy, subjects, f, rnd, maxWrites)
	if err != nil {
		return n, err
	}
	sleepCtx(ctx, time.Duration(200+rnd.IntN(1300))*time.Millisecond) // the fault holds a while
	return n, nil
}

// stepTimeout is how long the informers have to converge after a step of f:
// a slow fault's stalled watch takes the idle time-out to notice.
func stepTimeout(cfg Config, f Fault) time.Duration {
	if f.slow {
		return cfg.StepTimeout + IdleTimeout
	}
	return cfg.StepTimeout
}

// stepWrites makes a step's writes while fault f holds: a ghost for a ghost
// fault, else 1 to maxWrites writes with f's trigger at a random point among
// them. It returns how many writes succeeded.
func stepWrites(ctx context.Context, w *writer, proxy *faults.Proxy, subjects []*subject, f Fault, rnd *rand.Rand, maxWrites int) (int, error) {
	if f.ghost {
		return ghost(ctx, w, proxy, subjects)
	}
	n := 1 + rnd.IntN(maxWrites)
	at := rnd.IntN(n + 1)
	writes := 0
	for j := range n + 1 {
		if j == at && f.trigger != nil {
			f.trigger(proxy)
		}
		if j == n {
			break
		}
		if err := w.write(ctx); err != nil {
			return writes, err
		}
		writes++
	}
	return writes, nil
}

// markImpaired marks the subjects fault f impairs (the first time only) and
// returns the lines for Result.Impaired.
func markImpaired(f Fault, step string, subjects []*subject) []string {
	var out []string
	for _, s := range subjects {
		if why := impairs(f, s.flavor); why != "" && s.impaired == "" {
			s.impaired = step + ": " + why
			out = append(out, s.flavor.String()+" after "+s.impaired)
		}
	}
	return out
}

// violations collects what the subjects' handler and resourceVersion
// recorders found wrong.
func violations(subjects []*subject) []string {
	var out []string
	for _, s := range subjects {
		_, vs := s.rec.snapshot()
		for _, v := range vs {
			out = append(out, fmt.Sprintf("%s: handler: %s", s.flavor, v))
		}
		for _, v := range s.rv.result() {
			out = append(out, fmt.Sprintf("%s: %s", s.flavor, v))
		}
	}
	return out
}

func impairs(f Fault, fl Flavor) string {
	if f.impairs == nil {
		return ""
	}
	return f.impairs(fl)
}

// ghost writes the pattern that leaves a ghost in a cache whose re-list diffs
// against its indexer: a burst of patches queues events behind the slow
// informers' index function, without making the next list longer; then a Pod is
// created, and once the watches have delivered it, they end with a 410 while
// lists answer 503, and the Pod is deleted before lists work again. The
// deletion never reaches any watch; only a re-list that compares its list with
// what the informer was told (the ADDED still queued) finds it.
//
// client-go's indexer holds its lock while an index function runs, and a
// re-list that reads the indexer waits for one queued event per read: the
// burst must be longer than the list for the ADDED to still be queued.
func ghost(ctx context.Context, w *writer, p *faults.Proxy, subjects []*subject) (int, error) {
	removeList := p.AddRule(faults.Rule{Match: podList, Fault: faults.Status(503, 0)})
	removeStream := p.AddRule(faults.Rule{Match: podStream, Fault: faults.Status(503, 0)})
	defer removeList()
	defer removeStream()
	indexDelay.Store(int64(GhostIndexDelay))
	defer indexDelay.Store(int64(SlowIndexDelay))
	burst := 4*len(w.pods) + 40
	if err := w.patchBurst(ctx, burst); err != nil {
		return 0, err
	}
	if err := w.create(ctx, w.pickNamespace()); err != nil {
		return burst, err
	}
	writes := burst + 1
	last := w.newest()
	// Wait until a fast informer has the Pod: the watches have delivered it.
	var fast *subject
	for _, s := range subjects {
		if !s.flavor.SlowIndex && s.impaired == "" {
			fast = s
			break
		}
	}
	if fast != nil {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if _, ok, _ := fast.inf.GetStore().GetByKey(key(last.ns, last.name)); ok {
				break
			}
			sleepCtx(ctx, 10*time.Millisecond)
		}
	}
	sleepCtx(ctx, 50*time.Millisecond)
	p.EndWatches(pods, faults.Gone())
	if err := w.delete(ctx, last); err != nil {
		return writes, err
	}
	writes++
	// Let the re-lists through, to compare while the slow informers still
	// have the Pod's ADDED queued.
	removeList()
	removeStream()
	sleepCtx(ctx, time.Second)
	return writes, nil
}

// truthOf is a fresh consistent LIST of the run's Pods.
func truthOf(ctx context.Context, cs kubernetes.Interface, selector string) (state, error) {
	list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	out := state{}
	for _, p := range list.Items {
		out[key(p.Namespace, p.Name)] = p.ResourceVersion
	}
	return out, nil
}

// converge waits until every subject that can converge holds the truth and its
// handlers were told the same, and returns what did not, and which subject
// took longest.
func converge(ctx context.Context, subjects []*subject, truth state, step string, timeout time.Duration) (failures []string, slowest string) {
	start := time.Now()
	deadline := start.Add(timeout)
	pending := map[*subject]string{}
	for _, s := range subjects {
		if s.impaired == "" {
			pending[s] = "not checked"
		}
	}
	var slowestAt time.Duration
	for len(pending) > 0 {
		for s := range pending {
			told, _ := s.rec.snapshot()
			switch storeDiff, handlerDiff := truth.diff(storeState(s.inf)), truth.diff(told); {
			case storeDiff != "":
				pending[s] = "the store differs from a fresh LIST: " + storeDiff
			case handlerDiff != "":
				pending[s] = "what the handlers were told differs from the store: " + handlerDiff
			default:
				delete(pending, s)
				if d := time.Since(start); d >= slowestAt {
					slowestAt, slowest = d, fmt.Sprintf("%s at %s", s.flavor, d.Round(10*time.Millisecond))
				}
			}
		}
		if len(pending) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
	for _, s := range subjects {
		if why, ok := pending[s]; ok {
			failures = append(failures, fmt.Sprintf("%s: %s: %s", step, s.flavor, why))
		}
	}
	return failures, slowest
}

func metaOf(obj interface{}) (metav1.Object, error) {
	if obj == nil {
		return nil, errors.New("nil object")
	}
	return meta.Accessor(obj)
}

// Summary is a one-line description of a result.
func (r Result) Summary() string {
	status := "ok"
	if r.Failed() {
		status = fmt.Sprintf("FAILED (%d)", len(r.Failures))
	}
	return fmt.Sprintf("seed %d: %s in %s, %d writes, faults %s", r.Seed, status, r.Duration.Round(100*time.Millisecond), r.Writes, strings.Join(r.Faults, ","))
}
