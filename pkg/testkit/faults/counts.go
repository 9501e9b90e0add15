package faults

import (
	"maps"
	"time"
)

// Counts is what the proxy saw since it started or since the last
// ResetCounts. Every request is counted when it arrives, faulted or not.
type Counts struct {
	// Since is when counting started.
	Since time.Time
	// Requests is the number of requests.
	Requests int
	// ByVerb counts requests by verb.
	ByVerb map[Verb]int
	// ByResourceVerb counts requests by resource, then verb; requests that are
	// not for a resource are under "".
	ByResourceVerb map[string]map[Verb]int
	// ByUserAgent counts requests by User-Agent header, then verb: give each
	// client of a test its own rest.Config.UserAgent and this tells which of
	// them listed, and how often.
	ByUserAgent map[string]map[Verb]int
	// Faulted counts the requests a rule acted on, plus the streams that
	// EndWatches acted on. A Cut or Truncate is counted when it acts, once
	// the body reaches where it cuts: a body shorter than that, or one still
	// being read, is not counted.
	Faulted int
	// BytesToClient is the number of response body bytes written to clients.
	// Responses pass through uncompressed (the proxy asks the server for the
	// identity encoding so that it can read watch frames), so this is the
	// size of the objects as encoded, not of gzip on the wire.
	BytesToClient int64
	// PerSecond[i] is the number of requests that arrived in the i-th second
	// since Since.
	PerSecond []int
}

// MaxPerSecond is the largest entry of PerSecond: the worst second.
func (c Counts) MaxPerSecond() int {
	m := 0
	for _, n := range c.PerSecond {
		m = max(m, n)
	}
	return m
}

// clone deep-copies c so that callers may keep it while the proxy counts on.
func (c Counts) clone() Counts {
	out := c
	out.ByVerb = maps.Clone(c.ByVerb)
	out.ByResourceVerb = make(map[string]map[Verb]int, len(c.ByResourceVerb))
	for r, m := range c.ByResourceVerb {
		out.ByResourceVerb[r] = maps.Clone(m)
	}
	out.ByUserAgent = make(map[string]map[Verb]int, len(c.ByUserAgent))
	for a, m := range c.ByUserAgent {
		out.ByUserAgent[a] = maps.Clone(m)
	}
	out.PerSecond = append([]int(nil), c.PerSecond...)
	return out
}

func newCounts(now time.Time) Counts {
	return Counts{Since: now, ByVerb: map[Verb]int{}, ByResourceVerb: map[string]map[Verb]int{}, ByUserAgent: map[string]map[Verb]int{}}
}

// add counts one request arriving at now.
func (c *Counts) add(r request, now time.Time) {
	c.Requests++
	c.ByVerb[r.Verb]++
	m := c.ByResourceVerb[r.Resource]
	if m == nil {
		m = map[Verb]int{}
		c.ByResourceVerb[r.Resource] = m
	}
	m[r.Verb]++
	a := c.ByUserAgent[r.UserAgent]
	if a == nil {
		a = map[Verb]int{}
		c.ByUserAgent[r.UserAgent] = a
	}
	a[r.Verb]++
	sec := max(int(now.Sub(c.Since)/time.Second), 0)
	for len(c.PerSecond) <= sec {
		c.PerSecond = append(c.PerSecond, 0)
	}
	c.PerSecond[sec]++
}
