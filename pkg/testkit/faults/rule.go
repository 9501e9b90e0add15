package faults

import (
	"math/rand/v2"
	"strconv"
)

// Match selects requests. A zero field matches anything, so the zero Match
// selects every request.
type Match struct {
	// Resource is the plural resource name ("pods", "widgets"), with
	// "/subresource" for a subresource ("pods/status").
	Resource string
	// Namespace is the request's namespace; for requests on namespaces
	// themselves, the namespace's name.
	Namespace string
	// Verb selects one verb. Watch and WatchList are distinct: a rule for
	// Watch leaves streaming lists alone, and the reverse.
	Verb Verb
	// ResourceVersionAtMost, when not zero, selects only requests from a
	// resourceVersion at or below it: with Gone on watches, a server that
	// compacted its history at that resourceVersion, where every watch from
	// an older point expires and a watch from a newer one (or from now) works.
	ResourceVersionAtMost uint64
}

func (m Match) matches(r request) bool {
	return (m.Resource == "" || m.Resource == r.Resource) &&
		(m.Namespace == "" || m.Namespace == r.Namespace) &&
		(m.Verb == "" || m.Verb == r.Verb) &&
		(m.ResourceVersionAtMost == 0 || resourceVersionAtMost(r.ResourceVersion, m.ResourceVersionAtMost))
}

// resourceVersionAtMost reports whether rv is a resourceVersion at or below
// limit; "" (from now) and "0" (any) are not, as a server never expires them.
func resourceVersionAtMost(rv string, limit uint64) bool {
	n, err := strconv.ParseUint(rv, 10, 64)
	return err == nil && n > 0 && n <= limit
}

// Rule applies a Fault to the requests a Match selects. Rules are tried in the
// order they were added; the first one that fires decides the request's fault.
type Rule struct {
	Match
	Fault Fault
	// Count is how many requests the rule acts on before it goes quiet; zero
	// means no limit.
	Count int
	// Skip lets the first Skip matching requests through untouched, so that a
	// fault can hit, say, the second watch rather than the first.
	Skip int
	// Probability makes the rule fire on that fraction of the matching
	// requests, at random; zero means always.
	Probability float64
	// Counter, when not nil, counts the requests the rule fired on and those
	// its fault acted on (see Counter).
	Counter *Counter
}

// ruleState is a Rule with its counters, guarded by the Proxy's mutex.
type ruleState struct {
	Rule
	seen, fired int
}

// fire reports whether the rule acts on a request it matches, and counts it.
func (rs *ruleState) fire() bool {
	if rs.Count > 0 && rs.fired >= rs.Count {
		return false
	}
	rs.seen++
	if rs.seen <= rs.Skip {
		return false
	}
	if rs.Probability > 0 && rand.Float64() >= rs.Probability {
		return false
	}
	rs.fired++
	return true
}
