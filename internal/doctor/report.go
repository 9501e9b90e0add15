package doctor

import "time"

// Schema names the version of the JSON report. It changes when a field is
// renamed or its meaning changes, not when one is added.
const Schema = "cachetune.dev/doctor/v1"

// Report is what the doctor found on a cluster. Its JSON field names are
// stable (see Schema); sizes are bytes, durations seconds.
type Report struct {
	Schema    string    `json:"schema"`
	Generated time.Time `json:"generated"`
	Cluster   Cluster   `json:"cluster"`
	// Namespace the namespaced resources were read in; empty means all.
	Namespace string   `json:"namespace"`
	Settings  Settings `json:"settings"`
	// StreamingLists says whether the server serves streaming lists.
	StreamingLists Streaming  `json:"streamingLists"`
	Resources      []Resource `json:"resources"`
	// Recommendations are grouped by resource: access, detector findings,
	// then memory, in the order the fixes build on each other.
	Recommendations []Recommendation `json:"recommendations"`
	// Shards is the cache per replica for 1..N shards (PlanShards), when a
	// memory budget was asked about.
	Shards *ShardPlan `json:"shards,omitempty"`
}

// Cluster identifies the server that was examined.
type Cluster struct {
	Host          string `json:"host"`
	ServerVersion string `json:"serverVersion"`
}

// Settings are the doctor's options as they were applied.
type Settings struct {
	Sample             int     `json:"sample"`
	PageSize           int64   `json:"pageSize"`
	WatchSeconds       float64 `json:"watchSeconds"`
	StuckAfterSeconds  float64 `json:"stuckAfterSeconds"`
	LoopThreshold      int     `json:"loopThreshold,omitempty"`
	PingPongTurns      int     `json:"pingPongTurns,omitempty"`
	ChurnWindowSeconds float64 `json:"churnWindowSeconds,omitempty"`
}

// Support is a yes, no or unknown answer.
type Support string

// The answers of a Streaming check.
const (
	Supported   Support = "yes"
	Unsupported Support = "no"
	Unknown     Support = "unknown"
)

// Streaming is the result of one streaming-list attempt: a watch with
// sendInitialEvents=true, resourceVersionMatch=NotOlderThan on one resource.
type Streaming struct {
	Supported Support `json:"supported"`
	// Resource is the resource the watch was tried on (the smallest readable).
	Resource string `json:"resource,omitempty"`
	// Detail says why: the server's refusal, or the bookmark that ended the
	// initial events.
	Detail  string  `json:"detail,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
}

// Resource is what the doctor found for one resource.
type Resource struct {
	// Resource is the group-qualified plural name, e.g. "pods" or
	// "widgets.bench.cachetune.dev".
	Resource   string `json:"resource"`
	Group      string `json:"group"`
	Version    string `json:"version"`
	Kind       string `json:"kind"`
	Namespaced bool   `json:"namespaced"`
	// BuiltIn is true for kinds client-go's typed clientset knows, which the
	// server sends as protobuf; custom resources are JSON only.
	BuiltIn bool   `json:"builtIn"`
	Access  Access `json:"access"`
	// Error is why the resource could not be measured (forbidden, or a
	// failed list); the fields below are then empty.
	Error string `json:"error,omitempty"`

	Objects int `json:"objects"`
	// Namespaces counts the namespaces the objects are in; TopNamespaces are
	// the largest of them.
	Namespaces    int              `json:"namespaces"`
	TopNamespaces []NamespaceCount `json:"topNamespaces,omitempty"`
	JSON          Bytes            `json:"json"`
	// Protobuf is absent for custom resources.
	Protobuf      *Bytes `json:"protobuf,omitempty"`
	ManagedFields Share  `json:"managedFields"`
	LastApplied   Share  `json:"lastApplied"`
	// Largest are the largest objects by JSON size, largest first.
	Largest []Object `json:"largest"`
	List    Latency  `json:"list"`
	// Sampled is how many objects were decoded for the projections.
	Sampled     int          `json:"sampled"`
	Projections []Projection `json:"projections"`
	Stuck       []Stuck      `json:"stuck"`
	// Churn is set when the resource was watched (--watch).
	Churn *Churn `json:"churn,omitempty"`
}

// Access is what the identity may do with a resource, as the API server's
// SelfSubjectAccessReview answers.
type Access struct {
	// Checked is false when the review could not be made (an identity not
	// allowed to ask): List is then what listing showed, and Watch unknown.
	Checked bool `json:"checked"`
	List    bool `json:"list"`
	Watch   bool `json:"watch"`
	// Reason is the authorizer's reason for a denial, or why access could
	// not be checked.
	Reason string `json:"reason,omitempty"`
}

// NamespaceCount is the number of objects in one namespace.
type NamespaceCount struct {
	Namespace string `json:"namespace"`
	Objects   int    `json:"objects"`
}

// Bytes is a total size and the mean per object.
type Bytes struct {
	Total     int64   `json:"total"`
	PerObject float64 `json:"perObject"`
}

// Share is the part of the objects' JSON one thing takes.
type Share struct {
	Total     int64   `json:"total"`
	PerObject float64 `json:"perObject"`
	// Share is Total over the objects' total JSON size, from 0 to 1.
	Share float64 `json:"share"`
}

// Object is one large object.
type Object struct {
	Namespace     string `json:"namespace,omitempty"`
	Name          string `json:"name"`
	JSON          int64  `json:"json"`
	ManagedFields int64  `json:"managedFields"`
	LastApplied   int64  `json:"lastApplied"`
}

// Latency is the time of a paged LIST in the format an informer reads
// (protobuf for built-in kinds, JSON for custom resources): the first page
// alone, and every page one after the other.
type Latency struct {
	Format           string  `json:"format"`
	PageSize         int64   `json:"pageSize"`
	Pages            int     `json:"pages"`
	FirstPageSeconds float64 `json:"firstPageSeconds"`
	AllSeconds       float64 `json:"allSeconds"`
}

// Projection is the heap a cache of the resource would take in one mode,
// estimated from a decoded sample.
type Projection struct {
	// Mode is the name of the matching `cachebench run` mode, where there is
	// one, so that a projection can be checked by measurement.
	Mode      string  `json:"mode"`
	Title     string  `json:"title"`
	PerObject float64 `json:"perObject"`
	Total     int64   `json:"total"`
	// Saving is the share saved against the first projection (the plain
	// client-go cache), from 0 to 1.
	Saving float64 `json:"saving"`
}

// Stuck is an object Terminating for longer than the threshold.
type Stuck struct {
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name"`
	Since      time.Time `json:"since"`
	AgeSeconds float64   `json:"ageSeconds"`
	Finalizers []string  `json:"finalizers"`
}

// Churn is what a short watch of the resource showed.
type Churn struct {
	Seconds float64 `json:"seconds"`
	// Updates counts the updates seen, by class (spec, status, metadata, ...).
	Updates  map[string]int `json:"updates"`
	Findings []Finding      `json:"findings"`
	// Error is set when the watch ended early.
	Error string `json:"error,omitempty"`
}

// Finding is a reconcile loop or a ping-pong between two managers.
type Finding struct {
	Kind      string   `json:"kind"`
	Namespace string   `json:"namespace,omitempty"`
	Name      string   `json:"name"`
	Managers  []string `json:"managers"`
	Updates   int      `json:"updates"`
}

// Symptom is one of the troubleshooting guide's symptoms.
type Symptom string

// The symptoms the doctor can point at.
const (
	MemoryGrowth       Symptom = "memory keeps growing"
	ReconcileLoop      Symptom = "reconcile loop"
	StuckTerminating   Symptom = "stuck Terminating"
	WatchNotRecovering Symptom = "watch stops recovering"
)

// Recommendation names a symptom, its cause as found on this cluster, and the
// fix, with what it saves where that can be projected.
type Recommendation struct {
	Resource string  `json:"resource"`
	Symptom  Symptom `json:"symptom"`
	// Cause is the row of the guide's table, e.g. "large objects in the
	// store", with what the doctor saw.
	Cause string `json:"cause"`
	// Fix names the leanstore option (or other cachetune API) that fixes it.
	Fix string `json:"fix"`
	// Saving is the projected heap saved, in bytes, when it can be projected.
	Saving int64 `json:"saving,omitempty"`
	// SavingShare is Saving over the plain client-go cache, from 0 to 1.
	SavingShare float64 `json:"savingShare,omitempty"`
	// Peak is true when Saving is off the transient peak of each list (at
	// start and at every re-list), not off the cache itself.
	Peak bool `json:"peak,omitempty"`
	// Guide is the section of docs/troubleshooting.md about it.
	Guide string `json:"guide"`
}
