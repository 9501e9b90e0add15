package diagnose

import (
	"bytes"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// turn is what an update's managedFields tell about who wrote it.
type turn struct {
	// writers are the managers whose entries show they wrote: the entry is new,
	// its time advanced or its operation changed, or it gained fields.
	writers []string
	// took and from are set when a writer gained fields that another manager
	// lost in the same update: took ownership from it. That is the mark of two
	// writers fighting over one field.
	took, from string
}

type entryKey struct{ manager, operation, subresource string }

func keyOf(e metav1.ManagedFieldsEntry) entryKey {
	return entryKey{e.Manager, string(e.Operation), e.Subresource}
}

// turnOf compares managedFields before and after an update. With no
// managedFields (stripped by a transform, or a server that does not track
// them) it returns a zero turn.
func turnOf(old, cur []metav1.ManagedFieldsEntry) turn {
	var t turn
	if len(cur) == 0 {
		return t
	}
	before := make(map[entryKey]metav1.ManagedFieldsEntry, len(old))
	for _, e := range old {
		before[keyOf(e)] = e
	}
	after := make(map[entryKey]metav1.ManagedFieldsEntry, len(cur))
	for _, e := range cur {
		after[keyOf(e)] = e
	}
	gained := map[string]*fieldpath.Set{}
	lost := map[string]*fieldpath.Set{}
	addWriter := func(m string) {
		for _, w := range t.writers {
			if w == m {
				return
			}
		}
		t.writers = append(t.writers, m)
	}
	for _, e := range cur {
		k := keyOf(e)
		prev, existed := before[k]
		if !existed || later(e.Time, prev.Time) {
			addWriter(e.Manager)
		}
		if !existed || !sameFields(prev.FieldsV1, e.FieldsV1) {
			if g := difference(e.FieldsV1, prev.FieldsV1); g != nil && !g.Empty() {
				addWriter(e.Manager)
				gained[e.Manager] = union(gained[e.Manager], g)
			}
		}
	}
	for _, e := range old {
		k := keyOf(e)
		next, exists := after[k]
		if exists && sameFields(e.FieldsV1, next.FieldsV1) {
			continue
		}
		if l := difference(e.FieldsV1, next.FieldsV1); l != nil && !l.Empty() {
			lost[e.Manager] = union(lost[e.Manager], l)
		}
	}
	for _, w := range t.writers {
		g := gained[w]
		if g == nil {
			continue
		}
		for _, m := range slices.Sorted(maps.Keys(lost)) {
			if m != w && !g.Intersection(lost[m]).Empty() {
				t.took, t.from = w, m
				return t
			}
		}
	}
	return t
}

func later(a, b *metav1.Time) bool {
	switch {
	case a == nil:
		return false
	case b == nil:
		return true
	}
	return a.After(b.Time)
}

func sameFields(a, b *metav1.FieldsV1) bool {
	var ra, rb []byte
	if a != nil {
		ra = a.GetRawBytes()
	}
	if b != nil {
		rb = b.GetRawBytes()
	}
	return bytes.Equal(ra, rb)
}

// difference is the set of field paths in a and not in b; nil when a cannot be
// read.
func difference(a, b *metav1.FieldsV1) *fieldpath.Set {
	sa := parseFields(a)
	if sa == nil {
		return nil
	}
	sb := parseFields(b)
	if sb == nil {
		sb = &fieldpath.Set{}
	}
	return sa.Difference(sb)
}

func parseFields(f *metav1.FieldsV1) *fieldpath.Set {
	raw := f.GetRawBytes() // nil for a nil f
	if len(raw) == 0 {
		return nil
	}
	s := &fieldpath.Set{}
	if err := s.FromJSON(bytes.NewReader(raw)); err != nil {
		return nil
	}
	return s
}

func union(a, b *fieldpath.Set) *fieldpath.Set {
	if a == nil {
		return b
	}
	return a.Union(b)
}
