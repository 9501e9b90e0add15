package leanstore

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/cachetune/cachetune/internal/shrink"
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

// MutationError reports a shared value of cached objects that changed in place:
// the informer whose cache holds it (Informer, "" for a Transformer), the
// namespace/name of the object it was first shared from (Key), its field path
// there (Path, e.g. spec.containers[0].env) and how many cached objects it was
// given to (Holders).
type MutationError = shrink.MutationError

func mutationGuardFromEnv() bool {
	on, _ := strconv.ParseBool(os.Getenv(MutationGuardEnv))
	return on
}

// CheckMutations hashes every value the informer's cached objects share and
// returns a *MutationError for each that changed in place since it was shared
// (joined with errors.Join), naming the object and the field path. It returns
// nil when nothing changed, and when the guard is off (WithMutationGuard).
// What it finds for the first time is also logged and counted, as the
// periodic check does.
func (i *Informer) CheckMutations() error {
	if !i.strip.Guarded() {
		return nil
	}
	all, fresh := i.strip.Mutations()
	for _, e := range all {
		e.Informer = i.name
	}
	i.reporter.mutated(fresh)
	return shrink.JoinMutations(all)
}

// runGuard checks the shared values every guardInterval until ctx ends, when
// the informer has a guard, and returns a function that waits for the check's
// goroutine to end.
func (i *Informer) runGuard(ctx context.Context) (wait func()) {
	if !i.strip.Guarded() {
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
func (t *statusReporter) mutated(fresh []*MutationError) {
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
