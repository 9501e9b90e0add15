package conformance

import (
	stdcmp "cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The event streams. Each subject's handlers were told a sequence of events
// per key; the server's history (see history) says which events a watch on
// the run's selector delivers. A list (LIST or streaming list, client-go's
// Replace or leanstore's re-list inside the watch) may coalesce versions: it
// hands the version it finds, not the ones in between, and a deletion it
// finds as a delete at the list's resourceVersion (leanstore) or a tombstone
// (client-go). What may differ, then, is written down and checked here:
//
//   - every add or update is of a version the server had in the selector,
//     and its object equals the server's at that resourceVersion, with the
//     flavor's stripping (the events of a subject are a subsequence of the
//     history);
//   - a delete at resourceVersion R is of an object the server did not have
//     in the selector at R; a tombstone is of an object the server deleted
//     (or moved out) after the version the tombstone carries;
//   - in a phase in which a subject did not list, having held the truth
//     before and after it, its events of the versions written in the phase
//     are exactly the history's (same kinds, keys, resourceVersions, order
//     across keys): no list, so nothing may be coalesced;
//   - leanstore's events equal client-go's (same kind) in every phase in
//     which neither listed, and where both were told the same version of an
//     object, leanstore's object equals client-go's with leanstore's
//     stripping;
//   - leanstore's adds told as of the initial list (isInInitialList) are
//     client-go's: the same keys at the same resourceVersions, none missing
//     and none more (nothing is written during the initial sync, so every
//     informer's first list holds the same objects), all of them in the
//     initial sync;
//   - and the recorder's own checks (see recorder): no second add without a
//     delete, resourceVersions that go forwards, old objects that are the
//     last ones told.
//
// Every subject ends in the same state, the truth's: the checks after the
// last phase say so.

// maxStreamFailures bounds the failures reported per subject and check.
const maxStreamFailures = 6

// streamFailures checks every subject's events against the history, and
// leanstore's against client-go's.
func streamFailures(subjects []*subject, h *history, phases []*phase) []string {
	ideal := map[string]map[string][]idealEvent{}
	for k, kh := range h.kinds {
		ideal[k] = kh.ideal()
	}
	var out []string
	for _, s := range subjects {
		out = append(out, againstHistory(s, ideal[s.flavor.Kind], phases)...)
	}
	for _, s := range subjects {
		if s.flavor.Oracle() {
			continue
		}
		for _, o := range subjects {
			if o.flavor.Oracle() && o.flavor.Kind == s.flavor.Kind {
				out = append(out, againstClientGo(s, o, phases)...)
			}
		}
	}
	return out
}

// stream is a subject's events without the updates of unchanged objects,
// with their resourceVersions as numbers.
type stream struct {
	evs []toldEvent
	rvs []uint64
}

func streamOf(s *subject) stream {
	var st stream
	for _, e := range s.rec.toldEvents() {
		if e.unchanged {
			continue
		}
		n, _ := strconv.ParseUint(e.rv, 10, 64)
		st.evs = append(st.evs, e)
		st.rvs = append(st.rvs, n)
	}
	return st
}

// failures collects a check's failures, up to maxStreamFailures.
type failures struct {
	prefix string
	out    []string
	more   int
}

func (f *failures) add(format string, args ...any) {
	if len(f.out) < maxStreamFailures {
		f.out = append(f.out, f.prefix+fmt.Sprintf(format, args...))
		return
	}
	f.more++
}

func (f *failures) result() []string {
	if f.more > 0 {
		f.out = append(f.out, fmt.Sprintf("%s%d more", f.prefix, f.more))
	}
	return f.out
}

// againstHistory checks s's events against the history of its kind.
func againstHistory(s *subject, ideal map[string][]idealEvent, phases []*phase) []string {
	fails := &failures{prefix: fmt.Sprintf("%s: events: ", s.flavor)}
	st := streamOf(s)
	for i, e := range st.evs {
		n, hist := st.rvs[i], ideal[e.key]
		switch {
		case e.kind != evDelete:
			j := slices.IndexFunc(hist, func(ie idealEvent) bool { return ie.rvNum == n && ie.kind != evDelete })
			if j < 0 {
				fails.add("%s of %s at resourceVersion %s: the server never had that version in the selector", e.kind, e.key, e.rv)
				continue
			}
			if d := contentDiff(s.flavor, hist[j].obj, e.obj); d != "" {
				fails.add("%s of %s at resourceVersion %s: the object differs from the server's at that resourceVersion (-want +got):\n%s", e.kind, e.key, e.rv, indent(d))
			}
		case e.tombstone:
			if !slices.ContainsFunc(hist, func(ie idealEvent) bool { return ie.kind == evDelete && ie.rvNum > n }) {
				fails.add("tombstone of %s at resourceVersion %s: the server never deleted it (or moved it out) after that version", e.key, e.rv)
			}
		default:
			if last, ok := idealAt(hist, n); ok && last.kind != evDelete {
				fails.add("delete of %s at resourceVersion %s: the server had it in the selector then (%s at %s)", e.key, e.rv, last.kind, last.rv)
			}
		}
	}
	for i, ph := range phases {
		if !calm(s, phases, i) {
			continue
		}
		want := idealLines(ideal, ph.fromRV, ph.toRV)
		got := st.lines(ph.fromRV, ph.toRV)
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			fails.add("%s: listed no time, yet its events of the versions written then differ from the server's (-server +told):\n%s", ph.name, indent(d))
		}
	}
	return fails.result()
}

// againstClientGo checks leanstore subject s's events against client-go
// subject o's of the same kind.
func againstClientGo(s, o *subject, phases []*phase) []string {
	fails := &failures{prefix: fmt.Sprintf("%s: events against %s: ", s.flavor, o.flavor)}
	ss, os := streamOf(s), streamOf(o)
	type version struct{ key, rv string }
	theirs := map[version]toldEvent{}
	for _, e := range os.evs {
		if e.kind != evDelete {
			theirs[version{e.key, e.rv}] = e
		}
	}
	for _, e := range ss.evs {
		if e.kind == evDelete {
			continue
		}
		if t, ok := theirs[version{e.key, e.rv}]; ok {
			if d := contentDiff(s.flavor, t.obj, e.obj); d != "" {
				fails.add("%s of %s at resourceVersion %s: the object differs from client-go's (-client-go +leanstore):\n%s", e.kind, e.key, e.rv, indent(d))
			}
		}
	}
	if d := cmp.Diff(os.initialAdds(), ss.initialAdds(), cmpopts.EquateEmpty()); d != "" {
		fails.add("the adds told as of the initial list differ (-client-go +leanstore):\n%s", indent(d))
	}
	for i, ph := range phases {
		if !calm(s, phases, i) || !calm(o, phases, i) {
			continue
		}
		if d := cmp.Diff(os.lines(ph.fromRV, ph.toRV), ss.lines(ph.fromRV, ph.toRV), cmpopts.EquateEmpty()); d != "" {
			fails.add("%s: neither listed, yet the events differ (-client-go +leanstore):\n%s", ph.name, indent(d))
		}
	}
	return fails.result()
}

// calm reports whether subject s held the truth before and after phase i
// and did not list during it: it then had no way to coalesce versions, and
// must have been told every one written in the phase.
func calm(s *subject, phases []*phase, i int) bool {
	if i == 0 || (s.impaired != "" && i >= s.impairedAt) {
		return false
	}
	ph := phases[i]
	return ph.listed[s] == 0 && ph.converged[s] && phases[i-1].converged[s]
}

// idealAt is the last event of a key's history at or before resourceVersion n.
func idealAt(hist []idealEvent, n uint64) (idealEvent, bool) {
	var last idealEvent
	found := false
	for _, ie := range hist {
		if ie.rvNum > n {
			break
		}
		last, found = ie, true
	}
	return last, found
}

// idealLines are the history's events of every key with resourceVersions
// in (from, to], in resourceVersion order, one line each.
func idealLines(ideal map[string][]idealEvent, from, to uint64) []string {
	type line struct {
		rv   uint64
		text string
	}
	var ls []line
	for k, hist := range ideal {
		for _, ie := range hist {
			if ie.rvNum > from && ie.rvNum <= to {
				ls = append(ls, line{ie.rvNum, fmt.Sprintf("%s %s at %s", ie.kind, k, ie.rv)})
			}
		}
	}
	slices.SortFunc(ls, func(a, b line) int { return stdcmp.Compare(a.rv, b.rv) })
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.text
	}
	return out
}

// initialAdds are the adds told as of the initial list, one line each, in
// key order (a LIST and a streaming list need not hand them in the same
// order), each with the phase it was told in when that is not the initial
// sync.
func (st stream) initialAdds() []string {
	var out []string
	for _, e := range st.evs {
		if !e.initial {
			continue
		}
		l := fmt.Sprintf("%s %s at %s", e.kind, e.key, e.rv)
		if e.phase != 0 {
			l += fmt.Sprintf(" (in phase %d, not the initial sync)", e.phase)
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// lines are the stream's events with resourceVersions in (from, to], in the
// order the handler was told them, one line each.
func (st stream) lines(from, to uint64) []string {
	var out []string
	for i, e := range st.evs {
		if n := st.rvs[i]; n > from && n <= to && !e.tombstone {
			out = append(out, fmt.Sprintf("%s %s at %s", e.kind, e.key, e.rv))
		}
	}
	return out
}
