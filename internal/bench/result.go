package bench

import (
	"fmt"
	"time"

	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// Report is everything one cachebench run measured. It is what --json writes
// and what the table and the HTML report are rendered from.
type Report struct {
	// Schema is the version of this format.
	Schema      int         `json:"schema"`
	Started     time.Time   `json:"started"`
	Finished    time.Time   `json:"finished"`
	Environment Environment `json:"environment"`
	Plan        Plan        `json:"plan"`
	Datasets    []Dataset   `json:"datasets"`
	Results     []Result    `json:"results"`
	// Skipped says what the run left out, and why: a scale run leaves out
	// the sizes and modes that would not fit in the machine's memory.
	Skipped []string `json:"skipped,omitempty"`
}

// ReportSchema is the current Report.Schema. Schema 2 added churn, CPU and
// server costs, schema 3 the events phase, the sampling of each window and
// the collections a library forced; ReadJSON reads the earlier schemas too
// (without what they lack).
const ReportSchema = 3

// Environment says where the figures come from.
type Environment struct {
	// Target is "local kube-apiserver" or the host of the cluster measured.
	Target        string `json:"target"`
	ServerVersion string `json:"serverVersion,omitempty"`
	GoVersion     string `json:"goVersion"`
	ClientGo      string `json:"clientGo,omitempty"`
	OS            string `json:"os"`
	Arch          string `json:"arch"`
	CPUs          int    `json:"cpus"`
	// GOGC and GOMEMLIMIT are what the children ran with ("" = Go's default).
	GOGC       string `json:"gogc,omitempty"`
	GOMEMLIMIT string `json:"gomemlimit,omitempty"`
	// ServerArgs are the extra flags the local server ran with (--apiserver-args).
	ServerArgs string `json:"serverArgs,omitempty"`
	// ServerGOGC is the local server's GOGC when chosen (--apiserver-gogc).
	ServerGOGC string `json:"serverGOGC,omitempty"`
}

// Dataset describes the objects of one resource that the modes cached.
type Dataset struct {
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Count     int    `json:"count"`
	// Name and PodShape are the dataset's, when cachebench seeded it.
	Name     string `json:"name,omitempty"`
	PodShape string `json:"podShape,omitempty"`
	// Mean serialized sizes in bytes (0 when not measured).
	JSONBytes          float64 `json:"jsonBytes,omitempty"`
	ProtobufBytes      float64 `json:"protobufBytes,omitempty"`
	ManagedFieldsBytes float64 `json:"managedFieldsBytes,omitempty"`
	LastAppliedBytes   float64 `json:"lastAppliedBytes,omitempty"`
	// Seeded is true when cachebench created the objects for this run.
	Seeded bool `json:"seeded"`
	// SeedSeconds is how long writing them took (0 when not seeded).
	SeedSeconds float64 `json:"seedSeconds,omitempty"`
}

// Label is the result's mode, with its round in a run of several.
func (r Result) Label() string {
	if r.Round > 0 {
		return fmt.Sprintf("%s #%d", r.Mode, r.Round)
	}
	return r.Mode
}

// Result is the measurement of one mode on one resource, taken in its own
// process.
type Result struct {
	Mode  string `json:"mode"`
	Title string `json:"title"`
	// Resource is the resource cached, or the resources cached together in one
	// process, comma-separated.
	Resource  string `json:"resource"`
	Streaming bool   `json:"streaming"`
	// Round is the round of the run this result is of, from 1, when the
	// run had more than one (Plan.Rounds); 0 otherwise.
	Round int `json:"round,omitempty"`
	// Started is when the measurement started (wall clock): the windows'
	// offsets count from it.
	Started time.Time `json:"started,omitzero"`
	// Error is set when the mode failed; the figures are then partial.
	Error string `json:"error,omitempty"`

	// Objects is the number of objects in the store after the sync.
	Objects int `json:"objects"`
	// SyncSeconds is the time from starting the informer to HasSynced.
	SyncSeconds float64 `json:"syncSeconds"`

	// BaselineHeap is the live heap before the cache started (after a GC).
	BaselineHeap uint64 `json:"baselineHeapBytes"`
	// LiveHeap is the live heap after the sync (after a GC).
	LiveHeap uint64 `json:"liveHeapBytes"`
	// LiveRSS is the RSS right after that GC.
	LiveRSS uint64 `json:"liveRSSBytes"`
	// BytesPerObject is (LiveHeap - BaselineHeap) / Objects: what the cache
	// costs per object, without the process's fixed cost.
	BytesPerObject float64 `json:"bytesPerObject"`

	// InitialSync covers the time from the informer's start to a short settle
	// after HasSynced.
	InitialSync Window `json:"initialSync"`
	// Idle is a quiet window after the sync.
	Idle Window `json:"idle"`
	// ReconcileList is a read of every cached object through the mode's
	// reader, after the idle window; nil for a mode without a reader.
	ReconcileList *ReconcileList `json:"reconcileList,omitempty"`
	// Relists are the forced re-lists, in order.
	Relists []Relist `json:"relists"`
	// Events is the events phase, when the plan has one.
	Events *EventsPhase `json:"events,omitempty"`
	// Whole covers the run from the informer's start to the end.
	Whole Window `json:"whole"`

	// BytesReceived is the response body bytes the child read from the server
	// (after any transport decompression); SyncBytes those read until the sync.
	BytesReceived int64 `json:"bytesReceived"`
	SyncBytes     int64 `json:"syncBytes"`

	// ListPath is which list path was taken.
	ListPath ListPath `json:"listPath"`

	// HeapBoundOff says why the library's heap bound did not apply ("" when
	// it did, or when the library has none): leanstore leaves the garbage
	// collector alone in a process that chose its own policy, e.g. GOGC set
	// in its environment.
	HeapBoundOff string `json:"heapBoundOff,omitempty"`

	// Series is the heap and RSS over time, downsampled for charts.
	Series Series `json:"series"`
	// Markers are the moments the charts mark.
	Markers []Marker `json:"markers"`
}

// Window is what was measured between two moments.
type Window struct {
	// StartSeconds and EndSeconds are offsets from the measurement's start.
	StartSeconds float64 `json:"startSeconds"`
	EndSeconds   float64 `json:"endSeconds"`
	// PeakHeap and PeakRSS are the highest samples in the window.
	PeakHeap uint64 `json:"peakHeapBytes"`
	PeakRSS  uint64 `json:"peakRSSBytes"`
	// PeakRatio is PeakHeap divided by the live heap after the sync.
	PeakRatio float64 `json:"peakRatio"`
	// CPUSeconds is the CPU time (user and system) the measured process used.
	CPUSeconds float64 `json:"cpuSeconds"`
	// Server is what the API server spent, when it is a process cachebench
	// started (the local server); nil otherwise.
	Server *ServerCost `json:"server,omitempty"`
	// Sampling says how finely the heap was sampled in the window.
	Sampling Sampling `json:"sampling"`
	// ForcedGCs is the number of collections the library forced in the
	// window to bound its heap (leanstore's heap bound); 0 for a library
	// that does not say.
	ForcedGCs int `json:"forcedGCs,omitempty"`
	// Probe is the 1 ms probe goroutine's lateness.
	Probe LatencyStats `json:"probe"`
	// Runtime is what runtime/metrics recorded.
	Runtime RuntimeStats `json:"runtime"`
}

// Relist is one forced re-list.
type Relist struct {
	Index int    `json:"index"`
	Error string `json:"error,omitempty"`
	// WatchesEnded is how many watch streams the proxy ended with a 410.
	WatchesEnded int `json:"watchesEnded"`
	// Churn is the fraction of the objects changed between the 410 and the
	// re-list, and Changes what was written: updates, creates and deletes,
	// the same for every mode of a run.
	Churn   float64         `json:"churn"`
	Changes dataset.Changes `json:"changes"`
	// Seconds is from the first list request (sent once the changes were written)
	// until every object had been delivered again (client-go) or the library
	// reported the list complete and had delivered every change (leanstore).
	Seconds float64 `json:"seconds"`
	// Updates is the number of add and update events delivered in the re-list:
	// one per object with client-go, one per changed object with leanstore.
	Updates int `json:"updates"`
	// Delivered counts the handler's events in the re-list's window, by kind:
	// an update per object (client-go) or per change (leanstore), an add per
	// object created, a delete per object deleted.
	Delivered Events `json:"delivered"`
	// LiveHeapAfter is the live heap after the re-list settled (after a GC).
	LiveHeapAfter uint64 `json:"liveHeapAfterBytes"`
	// BytesReceived in the re-list window.
	BytesReceived int64 `json:"bytesReceived"`
	// Window runs from the list request (after the 410 and the changes) to a
	// settle after the re-list.
	Window Window `json:"window"`
}

// Events counts the events a cache delivered to its handler.
type Events struct {
	Adds    int `json:"adds"`
	Updates int `json:"updates"`
	Deletes int `json:"deletes"`
}

// Unchanged is how many updates the re-list delivered beyond the objects
// changed: client-go sends one for every object it holds, changed or not.
func (rl Relist) Unchanged() int { return max(0, rl.Delivered.Updates-rl.Changes.Updated) }

// Missed is how many changes the re-list did not deliver.
func (rl Relist) Missed() int {
	return max(0, rl.Changes.Updated-rl.Delivered.Updates) + max(0, rl.Changes.Created-rl.Delivered.Adds) +
		max(0, rl.Changes.Deleted-rl.Delivered.Deletes)
}

// ListPath reports the list path seen by the server and by the library.
type ListPath struct {
	// Server counts what the parent's proxy saw for the resource.
	Server Requests `json:"server"`
	// Client counts what the child's transport sent.
	Client Requests `json:"client"`
	// Library is what the library reported, "unknown" when it does not say.
	Library string `json:"library"`
}

// Requests counts list-path requests.
type Requests struct {
	List      int `json:"list"`
	WatchList int `json:"watchList"`
	Watch     int `json:"watch"`
}

func (r Requests) add(o Requests) Requests {
	return Requests{List: r.List + o.List, WatchList: r.WatchList + o.WatchList, Watch: r.Watch + o.Watch}
}

// Path names the list path these requests show: "streaming", "LIST", both
// with counts when a streaming list fell back, or "none".
func (r Requests) Path() string {
	switch {
	case r.WatchList > 0 && r.List == 0:
		return "streaming"
	case r.List > 0 && r.WatchList == 0:
		return "LIST"
	case r.List > 0 && r.WatchList > 0:
		return "mixed"
	}
	return "none"
}

// Series is a downsampled heap-over-time series in columns.
type Series struct {
	Seconds []float64 `json:"seconds"`
	Heap    []uint64  `json:"heapBytes"`
	RSS     []uint64  `json:"rssBytes"`
}

// Marker is a labelled moment on the time axis.
type Marker struct {
	Seconds float64 `json:"seconds"`
	Label   string  `json:"label"`
}

// RelistPeakRatio is the highest re-list peak over the live heap, 0 without
// re-lists.
func (r Result) RelistPeakRatio() float64 {
	var m float64
	for _, rl := range r.Relists {
		m = max(m, rl.Window.PeakRatio)
	}
	return m
}

// SyncCPUPerObject is the CPU time of the initial sync window per object.
func (r Result) SyncCPUPerObject() time.Duration {
	if r.Objects == 0 {
		return 0
	}
	return time.Duration(r.InitialSync.CPUSeconds * float64(time.Second) / float64(r.Objects))
}

// RelistProbeMax is the worst probe lateness in any re-list, in ms.
func (r Result) RelistProbeMax() float64 {
	var m float64
	for _, rl := range r.Relists {
		m = max(m, rl.Window.Probe.Max)
	}
	return m
}

// RelistSchedP99 is the highest scheduler-latency p99 of any re-list, in ms.
func (r Result) RelistSchedP99() float64 {
	var m float64
	for _, rl := range r.Relists {
		m = max(m, rl.Window.Runtime.Sched.P99)
	}
	return m
}

// GCCPUFraction is the share of available CPU spent on GC during the initial
// sync and the re-lists together (the windows where the cache does work; the
// GCs cachebench forces to read the live heap fall outside them).
func (r Result) GCCPUFraction() float64 {
	gc, total := r.InitialSync.Runtime.GCCPUSeconds, r.InitialSync.Runtime.AvailableCPUSeconds
	for _, rl := range r.Relists {
		gc += rl.Window.Runtime.GCCPUSeconds
		total += rl.Window.Runtime.AvailableCPUSeconds
	}
	if total == 0 {
		return 0
	}
	return gc / total
}

// seriesOf turns samples into columns.
func seriesOf(samples []MemSample) Series {
	s := Series{
		Seconds: make([]float64, len(samples)),
		Heap:    make([]uint64, len(samples)),
		RSS:     make([]uint64, len(samples)),
	}
	for i, m := range samples {
		s.Seconds[i] = m.T.Seconds()
		s.Heap[i] = m.Heap
		s.RSS[i] = m.RSS
	}
	return s
}
