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
	trigger func(p *faults.Proxy)
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
}

var (
	pods      = faults.Match{Resource: "pods"}
	podList   = faults.Match{Resource: "pods", Verb: faults.List}
	podWatch  = faults.Match{Resource: "pods", Verb: faults.Watch}
	podStream = faults.Match{Resource: "pods", Verb: faults.WatchList}
)

func endWatches(f faults.Fault) func(p *faults.Proxy) {
	return func(p *faults.Proxy) { p.EndWatches(pods, f) }
}

// Faults is the catalog a program picks from.
var Faults = []Fault{
	{Name: "none"},
	{Name: "watch-410", trigger: endWatches(faults.Gone())},
	{Name: "watch-410-ghost", ghost: true},
	{Name: "streaming-list-410", rules: func(rnd *rand.Rand) []faults.Rule {
		return []faults.Rule{{Match: podStream, Fault: faults.GoneAfterEvents(1 + rnd.IntN(20))}}
	}, trigger: endWatches(faults.Gone())},
	{Name: "watch-cut", trigger: endWatches(faults.Cut(0))},
	{Name: "truncated-bodies", rules: func(rnd *rand.Rand) []faults.Rule {
		n := 100 + rnd.IntN(4000)
		return []faults.Rule{{Match: podList, Fault: faults.Truncate(n)}, {Match: podStream, Fault: faults.Truncate(n)}}
	}, trigger: endWatches(faults.Gone())},
	{Name: "truncated-at-an-item", rules: func(rnd *rand.Rand) []faults.Rule {
		return []faults.Rule{{Match: podList, Fault: faults.TruncateAfterItems(rnd.IntN(30))}}
	}, trigger: endWatches(faults.Gone())},
	{Name: "malformed", rules: func(*rand.Rand) []faults.Rule {
		return []faults.Rule{{Match: podList, Fault: faults.Malformed()}, {Match: podStream, Fault: faults.Malformed()}, {Match: podWatch, Fault: faults.Malformed()}}
	}, trigger: endWatches(faults.Malformed())},
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
	}, trigger: endWatches(faults.Gone())},
	{Name: "status-5xx", rules: func(rnd *rand.Rand) []faults.Rule {
		code := []int{500, 503, 504}[rnd.IntN(3)]
		return []faults.Rule{{Match: podList, Fault: faults.Status(code, 0)}, {Match: podStream, Fault: faults.Status(code, 0)}, {Match: podWatch, Fault: faults.Status(code, 0)}}
	}, trigger: endWatches(faults.Status(503, 0))},
	{Name: "answer-json", rules: func(*rand.Rand) []faults.Rule {
		return []faults.Rule{{Match: pods, Fault: faults.AnswerJSON()}}
	}, trigger: endWatches(faults.Gone()), sticky: true},
	{Name: "no-initial-events-end", rules: func(*rand.Rand) []faults.Rule {
		return []faults.Rule{{Match: podStream, Fault: faults.DropInitialEventsEnd()}}
	}, trigger: endWatches(faults.Gone()), slow: true, sticky: true, impairs: func(f Flavor) string {
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

// apply adds the fault's rules to the proxy and returns the function that
// lifts them.
func (f Fault) apply(p *faults.Proxy, rnd *rand.Rand) (lift func()) {
	if f.rules == nil {
		return func() {}
	}
	var removes []func()
	for _, r := range f.rules(rnd) {
		removes = append(removes, p.AddRule(r))
	}
	return func() {
		for _, rm := range removes {
			rm()
		}
	}
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
