package leanstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"time"
	"unsafe"
)

// The mutation guard (WithMutationGuard, or CACHETUNE_MUTATION_DETECTOR=true in
// the environment) finds code that changes a shared value of a cached object in
// place. client-go forbids changing cached objects, and its
// KUBE_CACHE_MUTATION_DETECTOR finds such code by keeping a deep copy of every
// object; with sharing, one such change also rewrites every other object that
// shares the value, so leanstore watches exactly those values. The guard keeps,
// for each shared value, the hash it had when it was shared, the object it was
// first shared from and the field path there, a cost per shared value, not per
// object (the share-guard modes of BenchmarkSharing in bench/ measure it beside
// sharing alone); a check hashes every shared value again and reports those
// whose hash changed. It reports and never panics: a *MutationError from
// CheckMutations, a log line, Status.Mutations and the mutations_total counter.
// Values unique to one object are client-go's detector's business: changing
// them harms no other object.

// MutationGuardEnv turns the mutation guard on in every factory and Transformer
// of the process when set to true, as client-go's KUBE_CACHE_MUTATION_DETECTOR
// turns on its detector.
const MutationGuardEnv = "CACHETUNE_MUTATION_DETECTOR"

// guardInterval is how often an informer's Run (or a Transformer, when it
// transforms) checks the shared values.
var guardInterval = 5 * time.Second

// guardRecord is what the guard knows of one shared value. Its fields are
// written with the table's lock held.
type guardRecord struct {
	key, path string
	holders   int  // objects given this value, including the first
	reported  bool // logged and counted already
}

// MutationError reports a shared value of cached objects that changed in place.
type MutationError struct {
	// Informer names the informer whose cache holds the value ("" for a
	// Transformer).
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

func mutationGuardFromEnv() bool {
	on, _ := strconv.ParseBool(os.Getenv(MutationGuardEnv))
	return on
}

// mutations hashes every shared value again and returns those whose hash
// changed since they were shared, deepest path first; fresh are those no
// earlier check found.
func (t *shareTable) mutations() (all, fresh []*MutationError) {
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

func joinMutations(errs []*MutationError) error {
	if len(errs) == 0 {
		return nil
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return errors.Join(out...)
}

// CheckMutations hashes every value the informer's cached objects share and
// returns a *MutationError for each that changed in place since it was shared
// (joined with errors.Join), naming the object and the field path. It returns
// nil when nothing changed, and when the guard is off (WithMutationGuard).
// What it finds for the first time is also logged and counted, as the
// periodic check does.
func (i *Informer) CheckMutations() error {
	if i.table == nil || !i.table.guarded {
		return nil
	}
	all, fresh := i.table.mutations()
	for _, e := range all {
		e.Informer = i.name
	}
	i.tracker.mutated(fresh)
	return joinMutations(all)
}

// runGuard checks the shared values every guardInterval until ctx ends, when
// the informer has a guard, and returns a function that waits for the check's
// goroutine to end.
func (i *Informer) runGuard(ctx context.Context) (wait func()) {
	if i.table == nil || !i.table.guarded {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(guardInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = i.CheckMutations()
			}
		}
	}()
	return func() { <-done }
}

// mutated records and reports mutations found for the first time.
func (t *tracker) mutated(fresh []*MutationError) {
	if len(fresh) == 0 {
		return
	}
	t.mu.Lock()
	t.st.Mutations += int64(len(fresh))
	t.mu.Unlock()
	for _, e := range fresh {
		t.logger.Error(e, "cached object changed in place", "object", e.Key, "path", e.Path, "holders", e.Holders)
	}
	if t.metrics != nil {
		t.metrics.mutations.WithLabelValues(t.informer, t.resource).Add(float64(len(fresh)))
	}
}
