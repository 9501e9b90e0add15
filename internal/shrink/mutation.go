package shrink

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"unsafe"
)

// The mutation guard keeps, for each value sharing made canonical, the hash it
// had when it was shared, the object it was first shared from and the field
// path there (guardRecord, in sharetable.go); a check hashes every shared value
// again and returns those whose hash changed. The caller reports them: shrink
// logs and counts nothing.

// MutationError reports a shared value of cached objects that changed in place.
type MutationError struct {
	// Informer names the informer whose cache holds the value ("" for a
	// Transformer). Mutations leaves it empty for the caller to fill.
	Informer string
	// Key is the namespace/name of the object the value was first shared from.
	Key string
	// Path is the value's field path in that object, e.g. metadata.labels or
	// spec.containers[0].env.
	Path string
	// Holders counts the cached objects the value was given to.
	Holders int
}

func (e *MutationError) Error() string {
	where := ""
	if e.Informer != "" {
		where = e.Informer + " "
	}
	return fmt.Sprintf("cached object %s%s: %s changed in place; the value is shared by up to %d cached objects, which all changed with it",
		where, e.Key, e.Path, e.Holders)
}

// mutations hashes every value t shares again and returns those whose hash
// changed since they were shared, deepest path first; fresh are those no
// earlier check found.
func mutations(t *shareTable) (all, fresh []*MutationError) {
	var changed []*canonEntry
	for _, e := range t.entries() {
		if e.g == nil {
			continue
		}
		q := e.p.Value()
		if q == nil {
			continue
		}
		// Reading is safe beside listers: nothing writes a shared value but
		// the code this looks for.
		h := hashValue(fromPointer(e.t, unsafe.Pointer(q), e.n))
		runtime.KeepAlive(q)
		if h != e.h {
			changed = append(changed, e)
		}
	}
	if len(changed) == 0 {
		return nil, nil
	}
	t.mu.Lock()
	for _, e := range changed {
		err := &MutationError{Key: e.g.key, Path: e.g.path, Holders: e.g.holders}
		all = append(all, err)
		if !e.g.reported {
			e.g.reported = true
			fresh = append(fresh, err)
		}
	}
	t.mu.Unlock()
	deepestFirst(all)
	deepestFirst(fresh)
	return all, fresh
}

func deepestFirst(s []*MutationError) {
	sort.SliceStable(s, func(i, j int) bool {
		if len(s[i].Path) != len(s[j].Path) {
			return len(s[i].Path) > len(s[j].Path)
		}
		return s[i].Key+s[i].Path < s[j].Key+s[j].Path
	})
}

// JoinMutations joins errs with errors.Join, or returns nil when there are
// none.
func JoinMutations(errs []*MutationError) error {
	if len(errs) == 0 {
		return nil
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return errors.Join(out...)
}
