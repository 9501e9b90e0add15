package leanstore

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/cachetune/cachetune/internal/shardfilter"
	"github.com/cachetune/cachetune/internal/shrink"
	"github.com/cachetune/cachetune/pkg/backoff"
)

// Option configures a factory. Options apply to every informer of the factory.
type Option func(*options)

// StreamingMode chooses how an informer lists: with a streaming list (a watch with
// sendInitialEvents, client-go's WatchListClient) or with a paged LIST.
type StreamingMode int

const (
	// StreamingAuto tries a streaming list and falls back to a paged LIST when the
	// server refuses it; after a refusal the factory remembers it and lists with
	// LIST from then on instead of asking again at every re-list. The default.
	StreamingAuto StreamingMode = iota
	// StreamingOn always tries a streaming list first, at every list, and falls
	// back to a paged LIST for that list only when the server refuses.
	StreamingOn
	// StreamingOff always lists with a paged LIST.
	StreamingOff
)

func (m StreamingMode) String() string {
	switch m {
	case StreamingAuto:
		return "auto"
	case StreamingOn:
		return "on"
	case StreamingOff:
		return "off"
	}
	return fmt.Sprintf("StreamingMode(%d)", int(m))
}

// WireFormat is the encoding objects are requested in.
type WireFormat string

const (
	// WireDefault is protobuf for typed and metadata-only informers and JSON for
	// dynamic ones, which is all custom resources can be served as.
	WireDefault WireFormat = ""
	// WireProtobuf asks for protobuf: smaller on the wire and several times
	// faster to decode than JSON (BenchmarkDecodePodList in bench/; its figures
	// are in bench/results/go-bench.txt).
	WireProtobuf WireFormat = "protobuf"
	// WireJSON asks for JSON.
	WireJSON WireFormat = "json"
)

// Backoff is the delay between failed list or watch attempts of one informer:
// Initial, then multiplied by Factor up to Cap, each with up to Jitter×delay of
// random extra, and back to Initial after a success or once ResetAfter has
// passed without a failure. It is backoff.Backoff, the library's one schedule.
type Backoff = backoff.Backoff

// DefaultBackoff returns client-go's reflector backoff (backoff.Default):
// 800 ms, ×2, 30 s, jitter 1.0, reset after 2 min.
func DefaultBackoff() Backoff { return backoff.Default() }

type options struct {
	namespace     string
	tweak         func(*metav1.ListOptions)
	labelSelector string
	fieldSelector string
	resync        time.Duration
	customResync  map[reflect.Type]time.Duration
	strip         shrink.Config
	streaming     StreamingMode
	wire          WireFormat
	pageSize      int64
	backoff       Backoff
	idleTimeout   time.Duration
	logger        logr.Logger
	registerer    prometheus.Registerer
	degradedAfter int
	name          string
	heapBound     float64
	// err is the first invalid option (validate), nil when all are valid.
	err error
	// shard is WithShard's membership and key (shard.go); nil keeps every object.
	shard *shardfilter.Config
	// encoded is WithEncodedStore's configuration (encoded.go); nil keeps
	// objects decoded.
	encoded *EncodedStore
	// guardSet says the mutation guard was asked for with WithMutationGuard,
	// not only by the environment.
	guardSet bool
}

func defaultOptions() options {
	return options{
		namespace:     metav1.NamespaceAll,
		strip:         shrink.Config{ManagedFields: true, Intern: true, Guard: mutationGuardFromEnv()},
		streaming:     StreamingAuto,
		pageSize:      500,
		backoff:       DefaultBackoff(),
		idleTimeout:   2 * time.Minute,
		logger:        klog.Background(),
		degradedAfter: 3,
		heapBound:     1.25,
	}
}

// newOptions applies opts over the defaults. An invalid option is recorded
// in the err field, not dropped or clamped: the factory's constructors return
// no error (client-go's signatures), so the informers report it: they do not
// run, and Check and Status name the option (see Informer.RunWithContext).
func newOptions(resync time.Duration, opts []Option) options {
	o := defaultOptions()
	o.resync = resync
	for _, opt := range opts {
		opt(&o)
	}
	o.err = o.validate()
	return o
}

// validate returns the first option out of range, naming it. It is every
// option's check in one place; options themselves store what they are given.
func (o *options) validate() error {
	if o.resync < 0 {
		return fmt.Errorf("leanstore: resync period must not be negative, got %s", o.resync)
	}
	for t, d := range o.customResync {
		if d < 0 {
			return fmt.Errorf("leanstore: WithCustomResync for %s: period must not be negative, got %s", t, d)
		}
	}
	switch o.streaming {
	case StreamingAuto, StreamingOn, StreamingOff:
	default:
		return fmt.Errorf("leanstore: WithStreamingLists: unknown mode %s", o.streaming)
	}
	switch o.wire {
	case WireDefault, WireProtobuf, WireJSON:
	default:
		return fmt.Errorf("leanstore: WithWireFormat: unknown format %q (want %q or %q)", o.wire, WireProtobuf, WireJSON)
	}
	if o.pageSize < 0 {
		return fmt.Errorf("leanstore: WithPageSize: page size must not be negative, got %d", o.pageSize)
	}
	if err := o.backoff.Validate(); err != nil {
		return fmt.Errorf("leanstore: WithBackoff: %w", err)
	}
	if o.idleTimeout < 0 {
		return fmt.Errorf("leanstore: WithWatchIdleTimeout: must not be negative, got %s", o.idleTimeout)
	}
	if o.degradedAfter < 1 {
		return fmt.Errorf("leanstore: WithDegradedAfter: must be at least 1, got %d", o.degradedAfter)
	}
	if math.IsNaN(o.heapBound) || math.IsInf(o.heapBound, 0) || (o.heapBound != 0 && o.heapBound < 1) {
		return fmt.Errorf("leanstore: WithHeapBound: bound must be 0 (off) or at least 1, got %v", o.heapBound)
	}
	return o.validateEncoded()
}

// WithNamespace limits the factory's informers to one namespace.
func WithNamespace(namespace string) Option {
	return func(o *options) { o.namespace = namespace }
}

// WithLabelSelector limits lists and watches to objects matching selector.
func WithLabelSelector(selector string) Option {
	return func(o *options) { o.labelSelector = selector }
}

// WithFieldSelector limits lists and watches to objects matching selector.
func WithFieldSelector(selector string) Option {
	return func(o *options) { o.fieldSelector = selector }
}

// WithTweakListOptions changes the options of every list and watch request, like
// client-go's informers.WithTweakListOptions. It runs after the selectors above.
func WithTweakListOptions(tweak func(*metav1.ListOptions)) Option {
	return func(o *options) { o.tweak = tweak }
}

// WithCustomResync sets resync periods per object type, like client-go's
// informers.WithCustomResyncConfig.
func WithCustomResync(resync map[metav1.Object]time.Duration) Option {
	return func(o *options) {
		if o.customResync == nil {
			o.customResync = map[reflect.Type]time.Duration{}
		}
		for obj, d := range resync {
			o.customResync[reflect.TypeOf(obj)] = d
		}
	}
}

// WithKeepManagedFields keeps metadata.managedFields, which are stripped by
// default: server-side apply bookkeeping that controllers almost never read and
// that is often a third of an object.
func WithKeepManagedFields() Option {
	return func(o *options) { o.strip.ManagedFields = false }
}

// WithStripLastApplied strips kubectl's last-applied-configuration annotation, a
// full copy of the object as it was last applied.
func WithStripLastApplied() Option {
	return WithStripAnnotations(LastAppliedAnnotation)
}

// WithStripAnnotations strips the annotations with these exact keys.
func WithStripAnnotations(keys ...string) Option {
	return func(o *options) {
		if o.strip.Annotations == nil {
			o.strip.Annotations = map[string]bool{}
		}
		for _, k := range keys {
			o.strip.Annotations[k] = true
		}
	}
}

// WithStripAnnotationPrefixes strips every annotation whose key starts with one of
// these prefixes, e.g. "kubectl.kubernetes.io/".
func WithStripAnnotationPrefixes(prefixes ...string) Option {
	return func(o *options) { o.strip.AnnotationPrefixes = append(o.strip.AnnotationPrefixes, prefixes...) }
}

// WithPrune adds a prune for one resource, whatever Go type its objects have in an
// informer (typed, *unstructured.Unstructured, *metav1.PartialObjectMetadata).
func WithPrune(resource schema.GroupResource, prune PruneFunc) Option {
	return func(o *options) {
		if o.strip.Prunes == nil {
			o.strip.Prunes = map[schema.GroupResource][]func(runtime.Object) error{}
		}
		o.strip.Prunes[resource] = append(o.strip.Prunes[resource], prune)
	}
}

// WithTypedPrune adds a prune for objects of Go type T, e.g.
//
//	leanstore.WithTypedPrune(func(p *corev1.Pod) error {
//		for i := range p.Status.ContainerStatuses {
//			p.Status.ContainerStatuses[i].ImageID = ""
//		}
//		return nil
//	})
func WithTypedPrune[T runtime.Object](prune func(T) error) Option {
	var zero T
	t := reflect.TypeOf(zero)
	return func(o *options) {
		if o.strip.TypedPrunes == nil {
			o.strip.TypedPrunes = map[reflect.Type][]func(runtime.Object) error{}
		}
		o.strip.TypedPrunes[t] = append(o.strip.TypedPrunes[t], func(obj runtime.Object) error {
			return prune(obj.(T))
		})
	}
}

// WithTransform adds the caller's own transform after leanstore's stripping, like
// client-go's informers.WithTransform. It runs once on each object the informer
// decodes; objects unchanged since the last list are kept as they are and not
// transformed again. It must be idempotent, as client-go requires of transforms.
func WithTransform(transform cache.TransformFunc) Option {
	return func(o *options) { o.strip.Transform = transform }
}

// WithInterning keeps one copy of each repeated string among the cached objects
// of each informer (label keys and values, images, env, mount paths), and is on
// by default. Strings are immutable, so interning is safe: no change to a cached
// object can reach another object through an interned string. The copies are
// the informer's own and are freed with the last object holding them.
//
// It costs one pass over the string fields of each decoded object, along a
// plan of the type's fields made once per type; WithInterning(false) saves it.
// docs/memory.md gives what it saves and costs per mode, with the committed
// results it comes from.
func WithInterning(on bool) Option {
	return func(o *options) { o.strip.Intern = on }
}

// WithSharing makes the cached objects of each informer share their equal
// parts as well as their strings: the Pods of one workload repeat their
// containers, volumes, env, resources, labels and owner references byte for
// byte, and with sharing the informer's cache holds those once: a typed Pod of
// the standard dataset becomes about a fifth of its size with interning alone,
// for a walk of each decoded object (docs/memory.md, with the committed results).
//
// It is safe for listers reading on other goroutines while the informer lists
// and re-lists, and under client-go's WatchList, which runs a transform twice:
// a shared value is never written. Sharing stays within one informer (or one
// Transform or Transformer): a Service's selector never becomes the map holding
// a Pod's labels, nor does one factory's object share with another's.
//
// The risk, and why it is not on by default: within an informer, shared parts
// are one value held by many objects. Code that changes a cached object in
// place, which client-go forbids but which real controllers do by mistake,
// changes every object of the informer that shares the part:
// pods[1].Labels["x"] = "y" also changes the labels of every other Pod of that
// workload in the cache. A new version of an object also keeps the parts of
// the version it replaces that did not change (its walk compares them with
// the cached version's rather than hashing them), so the oldObj an
// OnUpdate handler receives shares those parts with the cached newObj: a
// write into oldObj shows in the cache too. Turn it on for code that never writes into listed
// objects (deep-copy before changing one), and run tests and staging with
// WithMutationGuard(true) or CACHETUNE_MUTATION_DETECTOR=true to find code that
// does. Prunes and transforms (WithPrune, WithTransform) must likewise write
// nothing when an object already has their result, and must set a new map or
// slice rather than write into the one an object holds: client-go runs them
// again on their own output, whose parts other cached objects already share.
func WithSharing(on bool) Option {
	return func(o *options) { o.strip.Share = on }
}

// WithMutationGuard watches the values that sharing (WithSharing) gives to
// several cached objects, and reports any that code changes in place: with the
// object it was first shared from and the field path (a *MutationError from
// Informer.CheckMutations or Transformer.CheckMutations), in a log line, in
// Status.Mutations and in the mutations_total counter. It never panics. An
// informer checks every 5 seconds while it runs. Setting
// CACHETUNE_MUTATION_DETECTOR=true in the environment turns it on everywhere,
// as client-go's KUBE_CACHE_MUTATION_DETECTOR does its own detector. It costs
// a record per shared value, not per object (its hash, the object it was first
// shared from and the field path; BenchmarkSharing in bench/ measures it), and
// a hash of every shared value per check; it is meant for tests and staging,
// like client-go's. It has
// no effect without WithSharing: interned strings cannot change in place.
func WithMutationGuard(on bool) Option {
	return func(o *options) { o.strip.Guard, o.guardSet = on, true }
}

// WithStreamingLists chooses between streaming lists and paged LISTs.
func WithStreamingLists(mode StreamingMode) Option {
	return func(o *options) { o.streaming = mode }
}

// WithWireFormat chooses the encoding of list and watch responses for typed and
// metadata-only informers. Dynamic informers always use JSON.
func WithWireFormat(f WireFormat) Option {
	return func(o *options) { o.wire = f }
}

// WithPageSize sets the number of objects per page of a paged LIST (default
// 500; 0 asks for every object in one response, as a Limit of 0 does).
// A page is decoded, stripped and released before the next one is requested, so it
// bounds the memory a LIST needs beyond the cache itself.
func WithPageSize(n int64) Option {
	return func(o *options) { o.pageSize = n }
}

// WithBackoff sets the delay between failed list and watch attempts.
func WithBackoff(b Backoff) Option {
	return func(o *options) { o.backoff = b }
}

// WithWatchIdleTimeout ends and restarts a watch that has delivered nothing, not
// even a bookmark, for d (default 2 minutes; the API server sends a bookmark about
// once a minute on a healthy watch). Zero disables the check.
func WithWatchIdleTimeout(d time.Duration) Option {
	return func(o *options) { o.idleTimeout = d }
}

// WithLogger sets the logger for list and watch failures. The default is
// klog.Background(), the library's one default (as in pkg/reconcile and
// pkg/profile): the logger client-go's own informers and reflectors write
// to, so klog.SetLogger routes both to a program's logger. logr.Discard()
// logs nothing.
func WithLogger(l logr.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithMetrics registers the factory's Prometheus metrics (store census, list
// paths, failures by class) with r. A registration that fails (another
// factory of the same name on r) is an invalid option: Check reports it
// and the informers do not run.
func WithMetrics(r prometheus.Registerer) Option {
	return func(o *options) { o.registerer = r }
}

// WithDegradedAfter sets how many consecutive failures make an informer count as
// degraded in readiness checks (default 3).
func WithDegradedAfter(n int) Option {
	return func(o *options) { o.degradedAfter = n }
}

// WithHeapBound bounds the heap while an informer lists: when the heap in use
// grows past bound times the live heap (and by at least 2 MiB), the list runs a
// garbage collection before it goes on, and once more at its end. After the
// informer's first list it goes on watching the heap from a goroutine of its
// own while the informer takes the list in (until a quarter of a second after
// HasSynced, or the informer's stop), collecting at a fifth of the bound's margin,
// and from the goroutine that stores the list's objects, which calls the
// informer's first index function for each of them (leanstore wraps it; the
// values are the caller's): client-go's hand-over allocates a few hundred bytes
// per object, most of it garbage by the time the informer has synced, which in
// a cache of small objects was a third of the live heap (docs/memory.md, "The
// start-up peak of small caches"). A collection forced there holds the
// indexer's lock for as long as it takes, during the first list only. The
// handlers the informer is given (AddEventHandler and its variants) are
// wrapped too: each add of the first list that client-go delivers to one ticks
// the bound from that handler's goroutine, where client-go allocates for every
// notification after the indexer's last tick; every call is passed on
// unchanged, and client-go's logs name such a handler leanstore.pacedHandler.
// With a bound of 0 the handlers are given to client-go as they are. The default,
// 1.25, keeps the start-up and re-list peaks near the cache's own size instead
// of about twice the live heap (GOGC=100), for the collections it forces:
// docs/memory.md ("The defaults, measured") gives the peaks and the forced
// collections measured, and BenchmarkPacedList (go test ./internal/reflector/ -run
// '^$' -bench BenchmarkPacedList) measures them for a list of 10,000 Pods. 0
// leaves collections to the runtime's pacing alone.
//
// The bound is help for a process that left the garbage collector's settings
// alone, and it never changes them. It does not apply when GOGC or GOMEMLIMIT
// is set in the environment, or when the program has called
// debug.SetGCPercent or debug.SetMemoryLimit (read from runtime/metrics at each
// list); Status.HeapBoundOff then says why. A list forces at most 256
// collections, and the informer's taking it in at most 256 more, after which
// the runtime's pacing takes over. Under WithEncodedStore a list holds its
// objects packed, which the informer decodes one by one as it takes them in:
// the list is bounded with half the bound's margin (its live heap holds the
// packs' metadata and the queue beside what the store keeps), and the
// informer's decoding collects as the list does, from the decoding goroutine,
// at most 512 times per list, since that decoding makes as much garbage again
// as the list. Status.ForcedGCs and the forced_gcs_total counter count what it forced.
func WithHeapBound(bound float64) Option {
	return func(o *options) { o.heapBound = bound }
}

// WithName names the factory in logs and metrics (default "leanstore").
func WithName(name string) Option {
	return func(o *options) { o.name = name }
}

// listOptions applies the factory's scope to one request's options.
func (o *options) listOptions(in metav1.ListOptions) metav1.ListOptions {
	if o.labelSelector != "" {
		in.LabelSelector = joinSelector(in.LabelSelector, o.labelSelector)
	}
	if o.fieldSelector != "" {
		in.FieldSelector = joinSelector(in.FieldSelector, o.fieldSelector)
	}
	if o.tweak != nil {
		o.tweak(&in)
	}
	return in
}

func joinSelector(a, b string) string {
	parts := []string{}
	for _, s := range []string{a, b} {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ",")
}

// WithEncodedStore keeps the objects of the factory's informers (or of
// EncodedStore.Resources' only) as their stripped encoded bytes, compressed,
// and decodes them on every read: protobuf for typed and metadata-only
// informers, JSON for dynamic ones and for Go types without protobuf (a
// custom resource's, through NewRESTInformer). It is opt-in.
//
// What changes for the program: every read (listers, GetStore, GetIndexer,
// ByIndex) returns a freshly decoded object that the caller owns and may
// change, unlike any other informer cache, client-go's included; handlers
// still receive decoded objects. What it costs: a read decodes (a repeated Get
// of the same unchanged object is a copy from a bounded hot cache), so a List
// of the whole cache decodes every object. docs/memory.md ("Choosing the
// encoded store, sharing or the defaults") gives the measured figures.
//
// The informer is client-go's SharedIndexInformer carried over around the
// encoded store, with the same behaviour (handlers, resync, SetTransform,
// AddIndexers before start, HasSynced, LastSyncResourceVersion). The record of
// what the informer has been handed, which re-lists diff against, keeps only
// each object's key, uid and resourceVersion under it. A list packs each
// object into the bytes the store will keep as soon as it is decoded
// (encstore.Packed), so neither the list nor the informer's queue holds the
// listed objects decoded: the informer decodes each when it applies it, for
// its handlers, and the store keeps the packed bytes.
//
// It excludes WithSharing and WithMutationGuard (whose values it would only
// encode): given together they are an invalid option. Interning is skipped,
// for the same reason. Informers that leanstore cannot list itself (a fake clientset, see
// ListPathClientGo) keep client-go's store.
func WithEncodedStore(cfg EncodedStore) Option {
	return func(o *options) { c := cfg; o.encoded = &c }
}

// validateEncoded is validate's part for WithEncodedStore.
func (o *options) validateEncoded() error {
	if o.encoded == nil {
		return nil
	}
	switch o.encoded.Compression {
	case CompressionS2Dict, CompressionZstdDict, CompressionNone:
	default:
		return fmt.Errorf("leanstore: WithEncodedStore: unknown compression %s", o.encoded.Compression)
	}
	if o.strip.Share {
		return fmt.Errorf("leanstore: WithEncodedStore and WithSharing exclude each other: an encoded store keeps bytes, not shared values")
	}
	if o.guardSet && o.strip.Guard {
		return fmt.Errorf("leanstore: WithEncodedStore and WithMutationGuard exclude each other: an encoded store hands out objects the caller owns, there is nothing shared to guard")
	}
	return nil
}
