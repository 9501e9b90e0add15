package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
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
	// Steps is the number of steps of a program (DefaultSteps).
	Steps int
	// InitialPods is the number of Pods created before the informers start (24).
	InitialPods int
	// MaxWrites bounds the writes of one step (12).
	MaxWrites int
	// Faults restricts the catalog to these names; empty means every fault.
	Faults []string
	// Bounds are leanstore's times to truth (DefaultBounds).
	Bounds Bounds
	// OracleStepTimeout bounds the wait for client-go's informers after a
	// step (10 s): they are timed, to bound leanstore's time by theirs, and
	// one that does not converge in time is left to converge by the end. It
	// must stay well below IdleTimeout: no write reaches the informers while
	// client-go is waited for, and a leanstore watch that sees nothing for
	// two idle time-outs in a row lists again, as it must when watches keep
	// stalling (with a real server's bookmarks about once a minute and the
	// default idle time-out of 2 minutes, a quiet watch never stalls).
	OracleStepTimeout time.Duration
	// OracleTimeout bounds the wait for client-go's informers to sync and to
	// converge at the end (90 s: client-go's backoff grows to 30 s, jitter
	// doubles it).
	OracleTimeout time.Duration
	// Attempts is how many times a step whose fault did not act (no request
	// met it) is run before the run fails (3).
	Attempts int
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
		c.Steps = DefaultSteps
	}
	if c.InitialPods == 0 {
		c.InitialPods = 24
	}
	if c.MaxWrites == 0 {
		c.MaxWrites = 12
	}
	if c.Bounds == (Bounds{}) {
		c.Bounds = DefaultBounds()
	}
	if c.OracleStepTimeout == 0 {
		c.OracleStepTimeout = 10 * time.Second
	}
	if c.OracleTimeout == 0 {
		c.OracleTimeout = 90 * time.Second
	}
	if c.Attempts == 0 {
		c.Attempts = 3
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
	// Acted counts, per fault, the steps in which it took effect; a step
	// whose fault did not act is run again (Config.Attempts), and its runs
	// that did not act are counted in NotActed.
	Acted, NotActed map[string]int
	// Times are the times to truth of each step.
	Times []StepTimes
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

// DefaultSteps is the number of steps of a program unless Config.Steps says.
const DefaultSteps = 6

var runSeq atomic.Int64

// runState is one Run's moving parts.
type runState struct {
	cfg      Config
	seed     uint64
	res      *Result
	c        clients
	w        *writer
	proxy    *faults.Proxy
	hist     *history
	subjects []*subject
	selector string
	// phase is the current phase's index in phases, which the recorders
	// stamp on every event.
	phase  atomic.Int32
	phases []*phase
}

func (r *runState) fail(format string, args ...any) {
	r.res.Failures = append(r.res.Failures, fmt.Sprintf(format, args...))
}

// Run runs the program of seed against every flavor at once and checks them.
// An error means the run itself could not be carried out (the server is not
// there); broken checks are in the Result.
func Run(ctx context.Context, cfg Config, seed uint64) (res Result, err error) {
	cfg.defaults()
	start := time.Now()
	res = Result{Seed: seed, Acted: map[string]int{}, NotActed: map[string]int{}}
	defer func() { res.Duration = time.Since(start) }()
	catalog, err := catalogOf(cfg.Faults)
	if err != nil {
		return res, err
	}
	if err = cfg.Bounds.check(); err != nil {
		return res, err
	}
	if cfg.OracleStepTimeout >= IdleTimeout {
		return res, fmt.Errorf("OracleStepTimeout %s: want it below IdleTimeout (%s)", cfg.OracleStepTimeout, IdleTimeout)
	}
	r := &runState{cfg: cfg, seed: seed, res: &res}
	if r.c, err = newClients(cfg.Server); err != nil {
		return res, err
	}
	run := fmt.Sprintf("s%d-%d-%d", seed, time.Now().UnixNano()%100000, runSeq.Add(1))
	r.w = newWriter(r.c.typed, run, seed)
	defer func() { res.Log = r.w.log }()
	if err := r.w.setup(ctx, cfg.InitialPods); err != nil {
		return res, err
	}
	if r.hist, err = startHistory(ctx, r.c, run); err != nil {
		return res, err
	}
	defer r.hist.stop()
	if r.proxy, err = faults.Start(cfg.Server); err != nil {
		return res, err
	}
	defer r.proxy.Close()
	r.selector = runLabel + "=" + run
	if r.subjects, err = newSubjects(cfg.Flavors, r.proxy.Config(cfg.Server), r.selector, &r.phase); err != nil {
		return res, err
	}

	var gates map[clientfeatures.Feature]bool
	if cfg.PerItemProcessing {
		gates = map[clientfeatures.Feature]bool{clientfeatures.InOrderInformersBatchProcess: false}
	}
	restoreGates := withGates(gates)
	defer restoreGates()
	ph, err := r.begin(ctx, "the initial sync", Fault{Name: "initial"})
	if err != nil {
		return res, err
	}
	stop := startSubjects(ctx, r.subjects)
	defer stop()
	res.Failures = append(res.Failures, waitSynced(ctx, r.subjects, cfg.OracleTimeout)...)
	if res.Failed() {
		return res, nil
	}
	if err := r.end(ctx, ph); err != nil {
		return res, err
	}
	r.check(ctx, ph, cfg.OracleTimeout, true)

	stickies := map[string]*applied{}
	defer func() {
		for _, a := range stickies {
			a.lift()
		}
	}()
	rnd := rand.New(rand.NewPCG(seed, programStream))
	for i, f := range planOf(seed, catalog, cfg.Steps) {
		res.Faults = append(res.Faults, f.Name)
		if err := r.step(ctx, i+1, f, rnd, stickies); err != nil {
			return res, err
		}
	}

	// The end: the writer releases every held Pod, with no new fault.
	ph, err = r.begin(ctx, "at the end", Fault{Name: "end"})
	if err != nil {
		return res, err
	}
	if err := r.w.releaseAll(ctx); err != nil {
		return res, err
	}
	if err := r.end(ctx, ph); err != nil {
		return res, err
	}
	r.check(ctx, ph, cfg.OracleTimeout, true)
	stop()

	// The event streams, against the server's history up to now.
	mark, err := r.w.mark(ctx)
	if err != nil {
		return res, err
	}
	if err := r.hist.waitFor(ctx, mark, 30*time.Second); err != nil {
		return res, err
	}
	res.Failures = append(res.Failures, streamFailures(r.subjects, r.hist, r.phases)...)
	res.Failures = append(res.Failures, violations(r.subjects)...)
	return res, nil
}

// step runs step number n of fault f, again while its fault does not act,
// up to Config.Attempts times. A sticky fault stays in stickies, by name, for
// the rest of the run; drawn again, it is the one in force, triggered again.
func (r *runState) step(ctx context.Context, n int, f Fault, rnd *rand.Rand, stickies map[string]*applied) error {
	for attempt := 1; attempt <= r.cfg.Attempts; attempt++ {
		name := fmt.Sprintf("step %d (%s)", n, f.Name)
		if attempt > 1 {
			name = fmt.Sprintf("step %d (%s, attempt %d)", n, f.Name, attempt)
		}
		r.cfg.Log("seed %d %s", r.seed, name)
		r.w.logf("-- %s", name)
		ph, err := r.begin(ctx, name, f)
		if err != nil {
			return err
		}
		a := stickies[f.Name]
		if a == nil {
			a = f.apply(r.proxy, rnd)
			if f.sticky {
				stickies[f.Name] = a
			}
		}
		for _, other := range stickies {
			if other != a {
				other.behind(r.proxy)
			}
		}
		rules0, triggers0 := a.counts()
		writes, err := r.hold(ctx, f, a, rnd)
		r.res.Writes += writes
		if !f.sticky {
			a.lift()
		}
		if err == nil {
			err = r.w.proof(ctx)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := r.end(ctx, ph); err != nil {
			return err
		}
		rules, triggers := a.counts()
		rules, triggers = rules-rules0, triggers-triggers0
		ph.acted = f.actedOn(rules, triggers)
		r.res.Impaired = append(r.res.Impaired, r.markImpaired(f, name)...)
		r.check(ctx, ph, r.cfg.OracleStepTimeout, false)
		if ph.acted {
			r.res.Acted[f.Name]++
			return nil
		}
		r.res.NotActed[f.Name]++
		r.cfg.Log("seed %d %s: the fault did not act (rules acted %d times, triggers %d)", r.seed, name, rules, triggers)
	}
	r.fail("step %d (%s): the fault did not act in %d attempts: no request or stream met it", n, f.Name, r.cfg.Attempts)
	return nil
}

// hold makes a step's writes under fault f (applied as a), holds the fault
// a while and returns how many writes succeeded.
func (r *runState) hold(ctx context.Context, f Fault, a *applied, rnd *rand.Rand) (int, error) {
	if f.ghost {
		return ghost(ctx, r.w, r.proxy, r.subjects, a)
	}
	rules0, triggers0 := a.counts()
	n := 1 + rnd.IntN(r.cfg.MaxWrites)
	at := rnd.IntN(n + 1)
	writes := 0
	for j := range n + 1 {
		if j == at {
			a.fire(r.proxy)
		}
		if j == n {
			break
		}
		if err := r.w.write(ctx); err != nil {
			return writes, err
		}
		writes++
	}
	sleepCtx(ctx, time.Duration(200+rnd.IntN(1300))*time.Millisecond) // the fault holds a while
	// A fault that no request met yet holds until one does, up to
	// holdUntilActed: a rule may need a request that only a later list
	// makes, e.g. a streaming list of a client-go informer still backing
	// off from the step before (leanstore's informers in auto mode list
	// with LIST once a stream ended without its initial-events-end
	// bookmark, so only client-go's may meet a streaming-list fault).
	// The writer goes on writing, a write a second, so that no watch falls
	// quiet long enough for leanstore's idle time-out.
	deadline := time.Now().Add(holdUntilActed)
	for i := 1; ctx.Err() == nil && time.Now().Before(deadline); i++ {
		rules, triggers := a.counts()
		if f.actedOn(rules-rules0, triggers-triggers0) {
			break
		}
		sleepCtx(ctx, 100*time.Millisecond)
		if i%10 == 0 {
			if err := r.w.write(ctx); err != nil {
				return writes, err
			}
			writes++
		}
	}
	return writes, nil
}

// holdUntilActed bounds how long a step holds a fault that no request met:
// client-go's reflector backs off up to 30 s between lists, doubled by its
// jitter.
const holdUntilActed = 65 * time.Second

// startSubjects runs every subject's informer and resourceVersion recorder
// until the returned stop is called, which waits for them; a second call
// returns at once.
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

// catalogOf returns the faults named (every fault when none is), or an error
// when a name is no fault's.
func catalogOf(names []string) ([]Fault, error) {
	if len(names) == 0 {
		return Faults, nil
	}
	var catalog []Fault
	for _, name := range names {
		i := slices.IndexFunc(Faults, func(f Fault) bool { return f.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("no fault named %q (the catalog: %v)", name, FaultNames())
		}
		catalog = append(catalog, Faults[i])
	}
	return catalog, nil
}

// newSubjects builds one subject per flavor, each through cfg (the proxy's).
func newSubjects(flavors []Flavor, cfg *rest.Config, selector string, phase *atomic.Int32) ([]*subject, error) {
	subjects := make([]*subject, 0, len(flavors))
	for _, f := range flavors {
		s, err := newSubject(f, cfg, selector, phase)
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

// markImpaired marks the subjects fault f impairs (the first time only) and
// returns the lines for Result.Impaired.
func (r *runState) markImpaired(f Fault, step string) []string {
	var out []string
	for _, s := range r.subjects {
		if why := impairs(f, s.flavor); why != "" && s.impaired == "" {
			s.impaired, s.impairedAt = step+": "+why, int(r.phase.Load())
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
//
// The 410 is counted in a's triggers: the fault acted when it ended a watch.
func ghost(ctx context.Context, w *writer, p *faults.Proxy, subjects []*subject, a *applied) (int, error) {
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
	a.triggers = append(a.triggers, p.EndWatchesCounted(pods, faults.Gone()))
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

// truthOf is a fresh consistent LIST of the run's Pods: key -> resourceVersion.
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

func metaOf(obj any) (metav1.Object, error) {
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
