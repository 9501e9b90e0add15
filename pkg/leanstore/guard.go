package leanstore

import (
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
