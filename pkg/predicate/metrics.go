package predicate

import "github.com/prometheus/client_golang/prometheus"

var eventsDesc = prometheus.NewDesc(
	"cachetune_predicate_events_total",
	"Informer events judged by a predicate, by event kind (create, update, delete) and result (passed, filtered).",
	[]string{"predicate", "event", "result"}, nil,
)

// NewCollector exports the counters of ps, and of the operands of any combinator
// among them, as the Prometheus counter cachetune_predicate_events_total with
// labels predicate (its Name), event and result. Counters are read at scrape
// time, so nothing is counted twice.
//
//	p := predicate.Any(predicate.GenerationChanged(), predicate.FinalizersChanged())
//	prometheus.MustRegister(predicate.NewCollector(p))
//
// Predicates that are not *Counted have no counters and are skipped. Distinct
// predicates with one name are summed into one series: give them distinct names
// with Named to tell them apart.
func NewCollector(ps ...Predicate) prometheus.Collector {
	c := &collector{}
	seen := map[*Counted]bool{}
	var walk func(p Predicate)
	walk = func(p Predicate) {
		cp, ok := p.(*Counted)
		if !ok || seen[cp] {
			return
		}
		seen[cp] = true
		c.ps = append(c.ps, cp)
		for _, child := range cp.children {
			walk(child)
		}
	}
	for _, p := range ps {
		walk(p)
	}
	return c
}

type collector struct {
	ps []*Counted
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) { ch <- eventsDesc }

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	type key struct{ name, event, result string }
	sums := map[key]uint64{}
	var order []key
	add := func(k key, v uint64) {
		if _, ok := sums[k]; !ok {
			order = append(order, k)
		}
		sums[k] += v
	}
	for _, p := range c.ps {
		s := p.Stats()
		for _, e := range []struct {
			ev Event
			c  Counts
		}{{EventCreate, s.Create}, {EventUpdate, s.Update}, {EventDelete, s.Delete}} {
			add(key{p.Name(), e.ev.String(), "passed"}, e.c.Passed)
			add(key{p.Name(), e.ev.String(), "filtered"}, e.c.Filtered)
		}
	}
	for _, k := range order {
		ch <- prometheus.MustNewConstMetric(eventsDesc, prometheus.CounterValue, float64(sums[k]), k.name, k.event, k.result)
	}
}
