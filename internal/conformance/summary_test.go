package conformance_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cachetune/cachetune/internal/conformance"
)

// summary adds up, per fault, what the seeds of a TestConformance run did:
// how many steps drew the fault and in how many it acted, and the times to
// truth of leanstore's and client-go's informers after it.
type summary struct {
	mu              sync.Mutex
	drawn, acted    map[string]int
	notActed        map[string]int
	lean, clientGo  map[string][]time.Duration // every informer's time, per fault
	leanLists       map[string]int
	leanStalls      map[string]int64 // the most stalls of one leanstore informer before it held the truth
	clientGoMissing map[string]int   // client-go informers, not impaired, that did not converge in the step's window
}

func newSummary() *summary {
	return &summary{drawn: map[string]int{}, acted: map[string]int{}, notActed: map[string]int{},
		lean: map[string][]time.Duration{}, clientGo: map[string][]time.Duration{}, leanLists: map[string]int{}, leanStalls: map[string]int64{}, clientGoMissing: map[string]int{}}
}

func (s *summary) add(res conformance.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range res.Faults {
		s.drawn[f]++
	}
	for f, n := range res.Acted {
		s.acted[f] += n
	}
	for f, n := range res.NotActed {
		s.notActed[f] += n
	}
	for _, st := range res.Times {
		for f, n := range st.Lists {
			if !f.Oracle() {
				s.leanLists[st.Fault] += n
			}
		}
		for f, t := range st.Times {
			if f.Oracle() {
				s.clientGo[st.Fault] = append(s.clientGo[st.Fault], t)
			} else {
				s.lean[st.Fault] = append(s.lean[st.Fault], t)
			}
		}
		for _, n := range st.Stalls {
			s.leanStalls[st.Fault] = max(s.leanStalls[st.Fault], n)
		}
		for _, f := range st.Late {
			if f.Oracle() {
				s.clientGoMissing[st.Fault]++
			}
		}
	}
}

// String is a table, one line per fault.
func (s *summary) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %6s %6s %7s %20s %20s %7s %7s %7s\n", "fault", "drawn", "acted", "reruns", "leanstore p50/max", "client-go p50/max", "cg late", "lists", "stalls")
	names := append(conformance.FaultNames(), "initial", "end")
	for _, f := range names {
		if s.drawn[f] == 0 && len(s.lean[f]) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%-22s %6d %6d %7d %20s %20s %7d %7d %7d\n", f, s.drawn[f], s.acted[f], s.notActed[f],
			quantiles(s.lean[f]), quantiles(s.clientGo[f]), s.clientGoMissing[f], s.leanLists[f], s.leanStalls[f])
	}
	return b.String()
}

func quantiles(ts []time.Duration) string {
	if len(ts) == 0 {
		return "-"
	}
	ts = slices.Clone(ts)
	slices.Sort(ts)
	return fmt.Sprintf("%s / %s", ts[len(ts)/2].Round(10*time.Millisecond), ts[len(ts)-1].Round(10*time.Millisecond))
}
