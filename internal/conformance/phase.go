package conformance

import (
	"context"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

// Bounds are how long a leanstore informer may take to hold the truth after
// a step's fault is lifted. None of them lets a missed event heal by itself:
// an idle time-out (IdleTimeout) that resumes a watch from an older
// resourceVersion, or two in a row that make the informer list again, fall
// outside them, and a list in a step that forces none fails the step anyway
// (Fault.relists).
type Bounds struct {
	// Quick bounds the faults leanstore notices at once: an ERROR event, a
	// broken or undecodable stream, a failed request (8 s). It must stay
	// below IdleTimeout. The default is the run's leanstore configuration
	// (see leanstoreOptions) at its slowest, with room for a loaded machine:
	// a backoff at its 2 s cap, jittered by half to 3 s; a probe each second
	// to notice the lift; the 1 s Retry-After of a 429; a list of the run's
	// Pods; 2 s for the load of a shared 2-core machine.
	Quick time.Duration
	// Slow bounds the faults noticed by a time-out, a stalled watch or a
	// streaming list that never ends its initial events: IdleTimeout once,
	// then Quick (23 s). It must stay below twice IdleTimeout, when a second
	// stall would make the informer list.
	Slow time.Duration
	// Slack is how much longer than client-go's informers of its kind a
	// leanstore informer may take, where they converge (2 s).
	Slack time.Duration
}

// DefaultBounds are the bounds for the run's configuration.
func DefaultBounds() Bounds {
	return Bounds{Quick: 8 * time.Second, Slow: IdleTimeout + 8*time.Second, Slack: 2 * time.Second}
}

func (b Bounds) check() error {
	if b.Quick <= 0 || b.Quick >= IdleTimeout || b.Slow < b.Quick || b.Slow >= 2*IdleTimeout {
		return fmt.Errorf("bounds %+v: want 0 < Quick < IdleTimeout (%s) and Quick <= Slow < twice IdleTimeout", b, IdleTimeout)
	}
	return nil
}

// of is the static bound for fault f.
func (b Bounds) of(f Fault) time.Duration {
	if f.slow {
		return b.Slow
	}
	return b.Quick
}

// StepTimes are the times to truth of one phase, from the lift of its fault
// (or the end of its writes) until each informer held the truth; an informer
// that did not is absent.
type StepTimes struct {
	Step, Fault string
	Times       map[Flavor]time.Duration
	// Bounds are the leanstore informers' bounds in the phase.
	Bounds map[Flavor]time.Duration
	// Lists counts each informer's lists (LIST or streaming) in the phase.
	Lists map[Flavor]int
	// Late are the informers, not impaired, that did not hold the truth
	// within their wait (client-go's may still be in their backoff).
	Late []Flavor
	// Stalls counts, per leanstore informer, its watches that stalled (its
	// idle time-out fired) in the phase before it held the truth.
	Stalls map[Flavor]int64
}

// phase is one stretch of a program: the initial sync, one run of a step,
// or the end. The phase's writes have resourceVersions in (fromRV, toRV].
type phase struct {
	index        int
	name         string
	fault        Fault
	fromRV, toRV uint64
	counts0      faults.Counts
	listsAt      map[*subject]int // each subject's lists when it held the truth
	stalls0      map[*subject]int64
	stalls       map[*subject]int64 // when the subject held the truth
	lifted       time.Time
	acted        bool
	// listed counts each subject's lists in the phase, converged says
	// whether it held the truth at the phase's end.
	listed    map[*subject]int
	converged map[*subject]bool
}

// begin starts a phase: later events are stamped with it.
func (r *runState) begin(ctx context.Context, name string, f Fault) (*phase, error) {
	rv, err := r.w.currentRV(ctx)
	if err != nil {
		return nil, err
	}
	ph := &phase{index: len(r.phases), name: name, fault: f, fromRV: rv, counts0: r.proxy.Counts(),
		listsAt: map[*subject]int{}, stalls0: map[*subject]int64{}, stalls: map[*subject]int64{}, listed: map[*subject]int{}, converged: map[*subject]bool{}}
	for _, s := range r.subjects {
		ph.stalls0[s] = s.stalls()
	}
	r.phases = append(r.phases, ph)
	r.phase.Store(int32(ph.index))
	return ph, nil
}

// end ends a phase's writes; its fault is lifted.
func (r *runState) end(ctx context.Context, ph *phase) error {
	rv, err := r.w.currentRV(ctx)
	if err != nil {
		return err
	}
	ph.toRV, ph.lifted = rv, time.Now()
	return nil
}

// check lists the truth, waits for the subjects to hold it (client-go's up
// to oracleWait, leanstore's up to their bound) and checks, per leanstore
// subject: its time to truth, that it did not list when the fault forces no
// list, and for every subject that holds the truth, the content of every
// object it holds. With oraclesMust, a client-go informer that is not
// impaired and does not hold the truth fails too (at the start and the end:
// after a step, client-go may still be waiting out its backoff).
func (r *runState) check(ctx context.Context, ph *phase, oracleWait time.Duration, oraclesMust bool) {
	truth, err := r.c.listTruth(ctx, r.selector)
	if err != nil {
		r.fail("%s: the truth: %v", ph.name, err)
		return
	}
	initial := ph.index == 0
	leanWait := r.cfg.Bounds.of(ph.fault)
	if initial {
		leanWait = oracleWait
	}
	times, pending := r.converge(ctx, ph, truth, leanWait, oracleWait)
	counts := r.proxy.Counts()
	st := StepTimes{Step: ph.name, Fault: ph.fault.Name, Times: map[Flavor]time.Duration{}, Bounds: map[Flavor]time.Duration{},
		Lists: map[Flavor]int{}, Stalls: map[Flavor]int64{}}
	for _, s := range r.subjects {
		// The lists until the subject held the truth: later ones, while
		// client-go is waited for, are those of a quiet watch (see
		// Config.OracleStepTimeout) and cannot have repaired anything.
		n, ok := ph.listsAt[s]
		if !ok {
			n = lists(counts, s.agent)
		}
		ph.listed[s] = n - lists(ph.counts0, s.agent)
		st.Lists[s.flavor] = ph.listed[s]
		if t, ok := times[s]; ok {
			st.Times[s.flavor] = t
			ph.converged[s] = true
			if !s.flavor.Oracle() {
				st.Stalls[s.flavor] = ph.stalls[s] - ph.stalls0[s]
			}
		}
	}
	for _, s := range r.subjects {
		if why, ok := pending[s]; ok {
			st.Late = append(st.Late, s.flavor)
			if !s.flavor.Oracle() || oraclesMust {
				r.fail("%s: %s: did not hold the truth in time: %s", ph.name, s.flavor, why)
			}
			continue
		}
		if s.flavor.Oracle() || initial || s.impaired != "" {
			continue
		}
		bound, why := leanWait, fmt.Sprintf("the bound of %s", ph.fault.Name)
		// A fault noticed by a time-out has no client-go time to compare
		// with for an informer that meets it: client-go's streaming
		// informers never notice it (impaired), and its LIST informers
		// never meet a streaming list's missing bookmark. leanstore's
		// streaming informers notice that one when the stream goes quiet
		// (or carries a change) without it: up to initialEventsEndWait
		// when no write follows their list. Its LIST informers are still
		// held to client-go's.
		exposed := ph.fault.slow && s.flavor.Streaming != "off"
		if ref, oracle, ok := r.reference(s, times); ok && !exposed && ref+r.cfg.Bounds.Slack < bound {
			bound, why = ref+r.cfg.Bounds.Slack, fmt.Sprintf("%s took %s, + %s", oracle.flavor, ref.Round(10*time.Millisecond), r.cfg.Bounds.Slack)
		}
		st.Bounds[s.flavor] = bound
		if times[s] > bound {
			r.fail("%s: %s: held the truth after %s, later than %s (%s)", ph.name, s.flavor, times[s].Round(10*time.Millisecond), bound.Round(10*time.Millisecond), why)
		}
		if !ph.fault.relists && ph.listed[s] > 0 {
			r.fail("%s: %s: listed %d times in a step whose fault forces no list: only a missed event needs one", ph.name, s.flavor, ph.listed[s])
		}
	}
	r.res.Times = append(r.res.Times, st)
	r.cfg.Log("seed %d %s: %d objects, %s", r.seed, ph.name, len(truth.keys), st.summary())
}

// lists counts the lists (LIST or streaming list) the proxy saw from agent.
func lists(c faults.Counts, agent string) int {
	by := c.ByUserAgent[agent]
	return by[faults.List] + by[faults.WatchList]
}

// reference is the time the slowest client-go informer of s's kind took to
// hold the truth in this phase, if every one that is not impaired did.
func (r *runState) reference(s *subject, times map[*subject]time.Duration) (time.Duration, *subject, bool) {
	var ref time.Duration
	var slowest *subject
	for _, o := range r.subjects {
		if !o.flavor.Oracle() || o.flavor.Kind != s.flavor.Kind || o.impaired != "" {
			continue
		}
		t, ok := times[o]
		if !ok {
			return 0, nil, false
		}
		if slowest == nil || t > ref {
			ref, slowest = t, o
		}
	}
	return ref, slowest, slowest != nil
}

// converge waits until every subject that can converge holds the truth
// (leanstore's up to leanWait from the phase's lift, client-go's up to
// oracleWait) and returns when each did, and why those that did not.
// A subject holds the truth when its store has the truth's keys at the
// truth's resourceVersions, its handlers were told the same, and every
// object equals the truth's; a content difference is reported then, as
// final, since the store cannot change any more.
func (r *runState) converge(ctx context.Context, ph *phase, t truthSet, leanWait, oracleWait time.Duration) (map[*subject]time.Duration, map[*subject]string) {
	times := map[*subject]time.Duration{}
	pending := map[*subject]string{}
	for _, s := range r.subjects {
		if s.impaired == "" {
			pending[s] = "not checked"
		}
	}
	for {
		for s := range pending {
			told, _ := s.rec.snapshot()
			switch storeDiff, handlerDiff := t.keys.diff(storeState(s.inf)), t.keys.diff(told); {
			case storeDiff != "":
				pending[s] = "the store differs from a fresh LIST: " + storeDiff
			case handlerDiff != "":
				pending[s] = "what the handlers were told differs from the store: " + handlerDiff
			default:
				times[s] = time.Since(ph.lifted)
				ph.stalls[s] = s.stalls()
				ph.listsAt[s] = lists(r.proxy.Counts(), s.agent)
				delete(pending, s)
				for _, f := range contentFailures(s, t) {
					r.fail("%s: %s", ph.name, f)
				}
			}
		}
		waiting := false
		for s := range pending {
			wait := leanWait
			if s.flavor.Oracle() {
				wait = oracleWait
			}
			if time.Since(ph.lifted) < wait {
				waiting = true
			}
		}
		if !waiting || ctx.Err() != nil {
			return times, pending
		}
		sleepCtx(ctx, 25*time.Millisecond)
	}
}

// summary is a short line of the phase's times and lists.
func (st StepTimes) summary() string {
	var lean, cg time.Duration
	var leanAt, cgAt Flavor
	for f, t := range st.Times {
		switch {
		case f.Oracle() && t >= cg:
			cg, cgAt = t, f
		case !f.Oracle() && t >= lean:
			lean, leanAt = t, f
		}
	}
	leanLists := 0
	for f, n := range st.Lists {
		if !f.Oracle() {
			leanLists += n
		}
	}
	var stalls int64
	for _, n := range st.Stalls {
		stalls += n
	}
	slowest := func(f Flavor, t time.Duration) string {
		if f.Library == "" {
			return "none"
		}
		return fmt.Sprintf("%s at %s", f, t.Round(10*time.Millisecond))
	}
	out := fmt.Sprintf("slowest leanstore %s, slowest client-go %s, leanstore lists %d, stalls %d", slowest(leanAt, lean), slowest(cgAt, cg), leanLists, stalls)
	if len(st.Late) > 0 {
		out += fmt.Sprintf(", late %v", st.Late)
	}
	return out
}

// stalls counts the watches of a leanstore subject that stalled so far.
func (s *subject) stalls() int64 {
	if s.status == nil {
		return 0
	}
	var n int64
	for _, st := range s.status() {
		n += st.StalledWatches
	}
	return n
}

// currentRV is the server's current resourceVersion: that of a consistent
// LIST of the run's mark, which reads it from etcd.
func (w *writer) currentRV(ctx context.Context) (uint64, error) {
	list, err := w.cs.CoreV1().Pods(w.namespaces[0]).List(ctx, metav1.ListOptions{LabelSelector: runLabel + "=" + markOf(w.run), Limit: 1})
	if err != nil {
		return 0, fmt.Errorf("the current resourceVersion: %w", err)
	}
	return strconv.ParseUint(list.ResourceVersion, 10, 64)
}
