package conformance

import (
	"math/rand/v2"
	"slices"
)

// planStream and programStream name a seed's two random streams: the fault
// plan, and everything else a program draws (rule parameters, the number of
// writes of a step and where its trigger falls, how long a fault holds). The
// writer has a third (see newWriter). Each stream depends on the seed alone,
// so that the plan of a seed is a pure function of the seed and the catalog:
// a test can tell which faults a set of seeds covers without running them,
// and changing the writes never changes the plan.
const (
	planStream    = 0x91a4
	programStream = 0x5eed
)

// PlanFaults returns the names of the faults of the steps of seed's program
// with the catalog restricted to names (every fault when names is empty):
// what Run draws, in order. An unknown name is an error.
func PlanFaults(seed uint64, names []string, steps int) ([]string, error) {
	catalog, err := catalogOf(names)
	if err != nil {
		return nil, err
	}
	plan := planOf(seed, catalog, steps)
	out := make([]string, len(plan))
	for i, f := range plan {
		out[i] = f.Name
	}
	return out, nil
}

// planOf draws steps faults from catalog with seed's plan stream. A sticky
// fault is drawn once at most, while the catalog has other faults: it stays
// in force, and drawn again it may have nothing left to act on (the
// informers that met a server without the initial-events-end bookmark list
// with LIST for good, and client-go's after a stall are stuck); nor is a
// fault that a sticky one drawn before it disables (Fault.disables: no
// streaming-list fault once no informer streams): the next candidate takes
// its place.
func planOf(seed uint64, catalog []Fault, steps int) []Fault {
	rnd := rand.New(rand.NewPCG(seed, planStream))
	plan := make([]Fault, steps)
	drawn := map[string]bool{}
	disabled := map[string]bool{}
	for i := range plan {
		cands := slices.DeleteFunc(slices.Clone(catalog), func(f Fault) bool { return f.sticky && drawn[f.Name] })
		if len(cands) == 0 {
			cands = catalog
		}
		j := rnd.IntN(len(cands))
		// A disabled fault gives way to the next candidate that is not:
		// every other step, and every program without it, keeps its draw.
		for k := 0; k < len(cands) && disabled[cands[j].Name]; k++ {
			j = (j + 1) % len(cands)
		}
		plan[i] = cands[j]
		drawn[plan[i].Name] = true
		for _, name := range plan[i].disables {
			disabled[name] = true
		}
	}
	return plan
}

// Uncovered returns the faults of the catalog (restricted to names, as in
// PlanFaults) that no plan of seeds draws, in catalog order.
func Uncovered(seeds []uint64, names []string, steps int) ([]string, error) {
	drawn := map[string]bool{}
	for _, s := range seeds {
		plan, err := PlanFaults(s, names, steps)
		if err != nil {
			return nil, err
		}
		for _, f := range plan {
			drawn[f] = true
		}
	}
	catalog, err := catalogOf(names)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range catalog {
		if !drawn[f.Name] && !slices.Contains(out, f.Name) {
			out = append(out, f.Name)
		}
	}
	return out, nil
}
