package conformance

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

// Fault is one kind of trouble a step puts the informers through.
type Fault struct {
	Name string
	// rules are active while the step writes, and lifted before the step
	// waits for convergence.
	rules func(rnd *rand.Rand) []faults.Rule
	// trigger acts on the live watches once during the step (for example,
	// ends them with a 410 so that every informer lists again).
	trigger func(p *faults.Proxy) *faults.Counter
	// impairs names the client-go flavors that cannot recover from the fault
	// by design, with the reason; leanstore must recover from every fault.
	impairs func(f Flavor) string
	// ghost runs the write pattern that leaves a ghost object in a cache that
	// diffs a re-list against its indexer (see Run).
	ghost bool
	// slow is true for faults that leanstore detects by a time-out (a stalled
	// watch, a missing bookmark): its informers get IdleTimeout more to converge.
	slow bool
	// sticky faults describe a server rather than an incident (it answers
	// only JSON; it never ends a streaming list's initial events): they stay
	// for the rest of the program, and the informers must converge under them.
	sticky bool
	// relists is set for the faults after which an informer must list again
	// (a 410 on its watch, a streaming list broken by one). A leanstore
	// informer that lists during a step of any other fault failed: nothing
	// but a missed event needs a list then, and a list would hide it.
	relists bool
	// disables names the faults that can no longer act once this sticky
	// fault is in force: the plan does not draw them after it.
	disables []string
	// eitherActs makes the fault count as acted when either its rules or
	// its trigger acted; by default its rules must have (its trigger, when
	// it has no rules). See actedOn.
	eitherActs bool
}

var (
	pods      = faults.Match{Resource: "pods"}
	podList   = faults.Match{Resource: "pods", Verb: faults.List}
	podWatch  = faults.Match{Resource: "pods", Verb: faults.Watch}
	podStream = faults.Match{Resource: "pods", Verb: faults.WatchList}
)

func endWatches(f faults.Fault) func(p *faults.Proxy) *faults.Counter {
	return func(p *faults.Proxy) *faults.Counter { return p.EndWatchesCounted(pods, f) }
}

// Faults is the catalog a program picks from.
var Faults = []Fault{
	{Name: "none"},
	{Name: "watch-410", trigger: endWatches(faults.Gone()), relists: true},
	{Name: "watch-410-ghost", ghost: true, relists: true},
	{Name: "streaming-list-410", rules: func(rnd *rand.Rand) []faults.Rule {
		return []faults.Rule{{Match: podStream, Fault: faults.GoneAfterEvents(1 + rnd.IntN(20))}}
	}, trigger: endWatches(faults.Gone()), relists: true},
	{Name: "watch-cut", trigger: endWatches(faults.Cut(0))},
	{Name: "truncated-bodies", rules: func(rnd *rand.Rand) []faults.Rule {
		n := 100 + rnd.IntN(4000)
		return []faults.Rule{{Match: podList, Fault: faults.Truncate(n)}, {Match: podStream, Fault: faults.Truncate(n)}}
	}, trigger: endWatches(faults.Gone()), relists: true},
	{Name: "truncated-at-an-item", rules: func(rnd *rand.Rand) []faults.Rule {
		return []faults.Rule{{Match: podList, Fault: faults.TruncateAfterItems(rnd.IntN(30))}}
	}, trigger: endWatches(faults.Gone()), relists: true},
	{Name: "malformed", rules: func(*rand.Rand) []faults.Rule {
		return []faults.Rule{{Match: podList, Fault: faults.Malformed()}, {Match: podStream, Fault: faults.Malformed()}, {Match: podWatch, Fault: faults.Malformed()}}
	}, trigger: endWatches(faults.Malformed()), eitherActs: true},
	{Name: "watch-stall", rules: func(*rand.Rand) []faults.Rule {
		return []faults.Rule{{Match: podWatch, Fault: faults.Stall()}}
	}, trigger: endWatches(faults.Cut(0)), slow: true, impairs: func(f Flavor) string {
		if f.Oracle() {
			return "client-go has no client-side idle time-out: a stalled watch stays stalled"
		}
		return ""
	}},
	{Name: "status-429", rules: func(*rand.Rand) []faults.Rule {
		return []faults.Rule{{Match: podList, Fault: faults.Status(429, time.Second)}, {Match: podStream, Fault: faults.Status(429, time.Second)}, {Match: podWatch, Fault: faults.Status(429, time.Second)}}
	}, trigger: endWatches(faults.Gone()), relists: true},
	{Name: "status-5xx", rules: func(rnd *rand.Rand) []faults.Rule {
		code := []int{500, 503, 504}[rnd.IntN(3)]
		return []faults.Rule{{Match: podList, Fault: faults.Status(code, 0)}, {Match: podStream, Fault: faults.Status(code, 0)}, {Match: podWatch, Fault: faults.Status(code, 0)}}
	}, trigger: endWatches(faults.Status(503, 0))},
	{Name: "answer-json", rules: func(*rand.Rand) []faults.Rule {
		return []faults.Rule{{Match: pods, Fault: faults.AnswerJSON()}}
	}, trigger: endWatches(faults.Gone()), sticky: true, relists: true},
	{Name: "no-initial-events-end", rules: func(*rand.Rand) []faults.Rule {
		return []faults.Rule{{Match: podStream, Fault: faults.DropInitialEventsEnd()}}
	}, trigger: endWatches(faults.Gone()), slow: true, sticky: true, relists: true,
		// Under it no informer streams any more: leanstore's list with LIST
		// for good, client-go's wait for the bookmark for ever.
		disables: []string{"streaming-list-410"}, impairs: func(f Flavor) string {
			if f.Oracle() && f.Streaming == "on" {
				return "client-go waits for the initial-events-end bookmark for as long as the stream lasts (kubernetes/kubernetes#140890)"
			}
			return ""
		}},
}

// FaultNames lists the catalog's names.
func FaultNames() []string {
	out := make([]string, len(Faults))
	for i, f := range Faults {
		out[i] = f.Name
	}
	return out
}

// applied is a fault in force: the counters of its rules and of each of its
// triggers, and the function that lifts its rules.
type applied struct {
	fault    Fault
	rules    []faults.Rule // with their counters
	removes  []func()
	triggers []*faults.Counter
}

// apply adds the fault's rules to the proxy, each with a counter.
func (f Fault) apply(p *faults.Proxy, rnd *rand.Rand) *applied {
	a := &applied{fault: f}
	if f.rules == nil {
		return a
	}
	for _, r := range f.rules(rnd) {
		r.Counter = &faults.Counter{}
		a.rules = append(a.rules, r)
	}
	a.add(p)
	return a
}

func (a *applied) add(p *faults.Proxy) {
	for _, r := range a.rules {
		a.removes = append(a.removes, p.AddRule(r))
	}
}

// lift removes the fault's rules.
func (a *applied) lift() {
	for _, rm := range a.removes {
		rm()
	}
	a.removes = nil
}

// behind moves the fault's rules behind every other rule: the proxy gives a
// request the fault of the first rule that matches it, and a sticky fault's
// rules must not hide a later step's (an answer-json rule matches every
// request for Pods).
func (a *applied) behind(p *faults.Proxy) {
	a.lift()
	a.add(p)
}

// fire runs the fault's trigger, if it has one.
func (a *applied) fire(p *faults.Proxy) {
	if a.fault.trigger != nil {
		a.triggers = append(a.triggers, a.fault.trigger(p))
	}
}

// counts returns how many times the rules and the triggers acted so far.
func (a *applied) counts() (rules, triggers int) {
	for _, r := range a.rules {
		rules += r.Counter.Acted()
	}
	for _, c := range a.triggers {
		triggers += c.Acted()
	}
	return rules, triggers
}

// actedOn reports whether the fault took effect, by the counts of its
// rules and triggers: a step whose fault did not act tested nothing.
func (f Fault) actedOn(rules, triggers int) bool {
	switch {
	case f.eitherActs:
		return rules+triggers > 0
	case f.rules != nil:
		return rules > 0
	case f.trigger != nil || f.ghost:
		return triggers > 0
	}
	return true // "none": nothing to act
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
