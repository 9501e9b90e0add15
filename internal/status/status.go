// Package status keeps what one leanstore informer reports about its
// list-and-watch path: its Status, and the Reporter that the list/watch loop
// (package reflector) tells of every list, watch and failure, which keeps the
// Status, logs, counts (Counters) and calls the informer's watch-error
// handlers. pkg/leanstore gives users these types under its own names.
package status

import (
	"time"

	"github.com/cachetune/cachetune/internal/reflector"
	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/shard"
)

// Status is the state of one informer's list-and-watch path.
type Status struct {
	Informer string             `json:"informer"`
	Resource string             `json:"resource"`
	Synced   bool               `json:"synced"`
	Wire     string             `json:"wire"`
	ListPath reflector.ListPath `json:"listPath"`
	// ListPathReason says why the list path was chosen, e.g. why a streaming list
	// fell back to LIST.
	ListPathReason string    `json:"listPathReason,omitempty"`
	Lists          int       `json:"lists"`
	LastListTime   time.Time `json:"lastListTime,omitzero"`
	LastListCount  int       `json:"lastListCount"`
	// ReusedObjects counts objects of the last list that were unchanged and kept.
	ReusedObjects       int            `json:"reusedObjects"`
	LastError           string         `json:"lastError,omitempty"`
	LastErrorReason     failure.Reason `json:"lastErrorReason,omitempty"`
	LastErrorCause      failure.Reason `json:"lastErrorCause,omitempty"`
	LastErrorTime       time.Time      `json:"lastErrorTime,omitzero"`
	FailingSince        time.Time      `json:"failingSince,omitzero"`
	ConsecutiveFailures int            `json:"consecutiveFailures"`
	// FailuresByCause counts failures by their cause, e.g. Gone, Forbidden.
	FailuresByCause map[failure.Reason]int64 `json:"failuresByCause,omitempty"`
	WatchesStarted  int64                    `json:"watchesStarted"`
	StalledWatches  int64                    `json:"stalledWatches"`
	// ForcedGCs counts the garbage collections the heap bound ran during lists
	// and while the informer took in its first list (WithHeapBound), at most
	// maxForcedPerList a list.
	ForcedGCs int64 `json:"forcedGCs"`
	// HeapBoundOff says why the heap bound did not apply to the last list,
	// e.g. "GOGC is set in the environment"; empty when it applied.
	HeapBoundOff string `json:"heapBoundOff,omitempty"`
	// Mutations counts shared values of cached objects found changed in place
	// by the mutation guard (WithMutationGuard).
	Mutations int64 `json:"mutations"`
	// Shard is the informer's shard, ring and rebalances (WithShard); nil
	// without sharding.
	Shard *Shard `json:"shard,omitempty"`
	// Encoded is the informer's encoded store (WithEncodedStore); nil when
	// it keeps decoded objects.
	Encoded *Encoded `json:"encoded,omitempty"`
}

// Degraded reports whether the informer has failed at least n times in a row.
func (s Status) Degraded(n int) bool { return n > 0 && s.ConsecutiveFailures >= n }

// Shard is the shard side of an informer's Status (leanstore's WithShard).
type Shard struct {
	// By is what decides an object's shard: "object" or "namespace".
	By shard.By `json:"by"`
	// Self is this replica's name in the ring, Members the ring's members.
	Self    string   `json:"self"`
	Members []string `json:"members"`
	// Generation is the version of the ring the informer holds the objects of.
	Generation uint64 `json:"generation"`
	// Rebalancing is true while the ring has changed and the informer has not
	// yet taken and dropped the objects that moved; RebalancingSince is when
	// the ring changed.
	Rebalancing      bool      `json:"rebalancing"`
	RebalancingSince time.Time `json:"rebalancingSince,omitzero"`
	// Rebalances counts the re-lists after a ring change; LastRebalance is
	// when the last ended and LastRebalanceSeconds how long it took from the
	// ring's change.
	Rebalances           int64     `json:"rebalances"`
	LastRebalance        time.Time `json:"lastRebalance,omitzero"`
	LastRebalanceSeconds float64   `json:"lastRebalanceSeconds,omitempty"`
	// SkippedListed and SkippedEvents count the objects of other shards
	// dropped from lists and from watch events.
	SkippedListed int64 `json:"skippedListed"`
	SkippedEvents int64 `json:"skippedEvents"`
	// Error is an invalid WithShard.
	Error string `json:"error,omitempty"`
}

// Encoded is what an informer's encoded store holds and how its reads were
// served (Status.Encoded, leanstore's WithEncodedStore).
type Encoded struct {
	Compression string `json:"compression"`
	Objects     int    `json:"objects"`
	// KeptBytes is the size of the kept bytes, compressed; DictBytes the
	// size of the trained dictionary (0 before training, or when training
	// failed: DictError says why).
	KeptBytes int64  `json:"keptBytes"`
	DictBytes int    `json:"dictBytes"`
	DictError string `json:"dictError,omitempty"`
	// HotHits and HotMisses count the hot cache's lookups, HotBytes its
	// estimated heap; Decodes the objects decoded for reads.
	HotHits   uint64 `json:"hotHits"`
	HotMisses uint64 `json:"hotMisses"`
	HotBytes  int64  `json:"hotBytes"`
	Decodes   uint64 `json:"decodes"`
}
