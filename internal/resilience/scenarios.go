package resilience

import (
	"time"

	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

// Scenario is one fault, applied to the informer's resource through the
// proxy for the fault duration.
type Scenario struct {
	// Name identifies the scenario in results, e.g. "watch-410".
	Name string
	// Start applies the fault and returns the function that lifts it.
	Start func(p *faults.Proxy, resource string) (lift func())
	// DuringFault marks a fault that outlives its lifting: a stalled
	// connection stays stalled after the proxy stops stalling new ones, so
	// convergence is checked while the stalled watches still hang, and
	// only a client that detects the stall itself recovers.
	DuringFault bool
	// NoGrant runs the informer as Options.Restricted, an identity with no
	// RBAC grant, from the start: every list and watch is 403 Forbidden, a
	// permanent error that only a change of RBAC ends. Lifting the fault
	// grants it list and watch on the resource. Start is not used.
	NoGrant bool
}

// on adds a rule with f for each verb on resource and returns a function
// that removes them all.
func on(p *faults.Proxy, resource string, f faults.Fault, verbs ...faults.Verb) func() {
	var removes []func()
	for _, v := range verbs {
		removes = append(removes, p.AddRule(faults.Rule{Match: faults.Match{Resource: resource, Verb: v}, Fault: f}))
	}
	return func() {
		for _, r := range removes {
			r()
		}
	}
}

// endAndFault ends the live watches with end (forcing the informer onto
// the faulted path) and keeps faulting the given verbs with f.
func endAndFault(end, f faults.Fault, verbs ...faults.Verb) func(p *faults.Proxy, resource string) func() {
	return func(p *faults.Proxy, resource string) func() {
		lift := on(p, resource, f, verbs...)
		p.EndWatches(faults.Match{Resource: resource}, end)
		return lift
	}
}

var (
	watches = []faults.Verb{faults.Watch, faults.WatchList}
	lists   = []faults.Verb{faults.List, faults.WatchList}
)

// Scenarios are the faults of issue 9, for an informer of about the given
// number of objects of about objectBytes each (to place a cut a third of the
// way through a list).
func Scenarios(objects, objectBytes int) []Scenario {
	third := max(objects*objectBytes/3, 1024)
	return []Scenario{
		{Name: "watch-410", Start: endAndFault(faults.Gone(), faults.Gone(), watches...)},
		{Name: "stream-410-after-100", Start: endAndFault(faults.Gone(), faults.GoneAfterEvents(100), lists...)},
		{Name: "stream-cut", Start: endAndFault(faults.Gone(), faults.Cut(third), lists...)},
		{Name: "watch-stall", Start: endAndFault(faults.Stall(), faults.Stall(), watches...), DuringFault: true},
		{Name: "watch-malformed", Start: endAndFault(faults.Malformed(), faults.Malformed(), watches...)},
		{Name: "list-429", Start: endAndFault(faults.Gone(), faults.Status(429, time.Second), lists...)},
		{Name: "list-503", Start: endAndFault(faults.Gone(), faults.Status(503, 0), lists...)},
		{Name: "list-500", Start: endAndFault(faults.Gone(), faults.Status(500, 0), lists...)},
		{Name: "watch-403", Start: endAndFault(faults.Gone(), faults.Status(403, 0), watches...)},
	}
}

// NoGrant is the scenario of a restricted identity: 403 on every request
// until the identity is granted list and watch (see Scenario.NoGrant).
func NoGrant() Scenario { return Scenario{Name: "no-grant-403", NoGrant: true} }
