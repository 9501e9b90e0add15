package predicate

import "strings"

// Any passes an event when at least one of ps passes it; with no operands it
// passes nothing. Every operand judges every event (no short cut), so each
// operand's own counters stay exact: Stats of the operands tell which of them
// let an event through. The name is "any(a,b,...)"; rename with Named.
func Any(ps ...Predicate) *Counted {
	return combine("any", ps, func(results []bool) bool {
		for _, r := range results {
			if r {
				return true
			}
		}
		return false
	})
}

// All passes an event when every one of ps passes it; with no operands it
// passes everything. Like Any, every operand judges every event.
func All(ps ...Predicate) *Counted {
	return combine("all", ps, func(results []bool) bool {
		for _, r := range results {
			if !r {
				return false
			}
		}
		return true
	})
}

// Not inverts p on every event kind, creates and deletes included: Not of a
// change predicate (which passes every create and delete) filters them all.
// Combine it with All to restrict updates only, for example
// All(Not(LabelsChanged()), ...).
func Not(p Predicate) *Counted {
	return &Counted{
		name:     "not(" + p.Name() + ")",
		create:   func(obj any) bool { return !p.Create(obj) },
		update:   func(o, n any) bool { return !p.Update(o, n) },
		delete:   func(obj any) bool { return !p.Delete(obj) },
		children: []Predicate{p},
	}
}

func combine(op string, ps []Predicate, join func([]bool) bool) *Counted {
	ps = append([]Predicate(nil), ps...)
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name()
	}
	each := func(decide func(Predicate) bool) bool {
		results := make([]bool, len(ps))
		for i, p := range ps {
			results[i] = decide(p)
		}
		return join(results)
	}
	return &Counted{
		name:     op + "(" + strings.Join(names, ",") + ")",
		create:   func(obj any) bool { return each(func(p Predicate) bool { return p.Create(obj) }) },
		update:   func(o, n any) bool { return each(func(p Predicate) bool { return p.Update(o, n) }) },
		delete:   func(obj any) bool { return each(func(p Predicate) bool { return p.Delete(obj) }) },
		children: ps,
	}
}
