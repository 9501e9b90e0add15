package diagnose

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
)

// Stuck is an object that has been Terminating for longer than the threshold:
// its deletionTimestamp has passed, and finalizers (or, for Pods, a kubelet
// that never confirms) keep it.
type Stuck struct {
	Resource string
	Object   ObjectRef
	// DeletionTimestamp is when deletion was requested, plus the grace period.
	// The API server stores it to the second.
	DeletionTimestamp time.Time
	// Age is how long ago DeletionTimestamp passed, at the scan.
	Age time.Duration
	// Finalizers are what the object waits for; each must be removed by the
	// controller that added it. Empty means something other than finalizers
	// holds it (for a Pod: the kubelet).
	Finalizers []string
}

// StuckDetector finds objects stuck Terminating: in an informer's store (Scan,
// ScanStore, or periodically with Run) or with a one-shot metadata-only list
// (List). It keeps the result of the latest scan for Last and WithMetrics. It is
// safe for concurrent use.
type StuckDetector struct {
	o options

	mu   sync.Mutex
	last []Stuck
}

// NewStuckDetector returns a detector configured by opts (WithThreshold,
// WithResource, WithMaxFindings, WithClock, WithMetrics), or an error naming
// the first option out of range or a failed WithMetrics registration.
func NewStuckDetector(opts ...StuckOption) (*StuckDetector, error) {
	o, err := buildStuck(opts)
	if err != nil {
		return nil, err
	}
	s := &StuckDetector{o: o}
	if err := o.register(stuckCollector{s}); err != nil {
		return nil, err
	}
	return s, nil
}

// Scan returns the objects among objs (typed, unstructured,
// PartialObjectMetadata) whose deletionTimestamp is older than the threshold,
// oldest first, and keeps the result as the latest.
func (s *StuckDetector) Scan(objs []any) []Stuck {
	now := s.o.clock.Now()
	var out []Stuck
	for _, obj := range objs {
		m, ok := objectOf(obj)
		if !ok {
			continue
		}
		ts := m.GetDeletionTimestamp()
		if ts == nil {
			continue
		}
		age := now.Sub(ts.Time)
		if age <= s.o.threshold {
			continue
		}
		out = append(out, Stuck{
			Resource:          s.o.resource,
			Object:            refOf(m),
			DeletionTimestamp: ts.Time,
			Age:               age,
			Finalizers:        slices.Clone(m.GetFinalizers()),
		})
	}
	slices.SortFunc(out, func(a, b Stuck) int {
		if c := a.DeletionTimestamp.Compare(b.DeletionTimestamp); c != 0 {
			return c
		}
		return compareRefs(a.Object, b.Object)
	})
	s.mu.Lock()
	s.last = out
	s.mu.Unlock()
	return out
}

func compareRefs(a, b ObjectRef) int {
	if a.Namespace != b.Namespace {
		if a.Namespace < b.Namespace {
			return -1
		}
		return 1
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

// ScanStore scans an informer's store (informer.GetStore() or an indexer).
func (s *StuckDetector) ScanStore(store cache.Store) []Stuck {
	return s.Scan(store.List())
}

// Run scans store every interval until ctx ends, so that Last and the
// Prometheus gauges stay current. It scans at once, then every interval, and
// returns when ctx is done.
func (s *StuckDetector) Run(ctx context.Context, store cache.Store, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.ScanStore(store)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// List lists a resource's metadata (namespace "" for all namespaces), page by
// page, and scans it: a one-shot check for a cluster with no informer running,
// as cachebench doctor does. A metadata-only list carries deletion timestamps
// and finalizers at a fraction of the full objects' size.
func (s *StuckDetector) List(ctx context.Context, client metadata.Interface, gvr schema.GroupVersionResource, namespace string) ([]Stuck, error) {
	var objs []any
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := client.Resource(gvr).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list %s metadata in namespace %q: %w", gvr.GroupResource(), namespace, err)
		}
		for i := range list.Items {
			objs = append(objs, &list.Items[i])
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	out := s.Scan(objs)
	if s.o.resource == "" {
		// Name what was listed in the caller's copy of the results; metrics
		// keep the detector's own resource label.
		out = slices.Clone(out)
		for i := range out {
			out[i].Resource = gvr.GroupResource().String()
		}
	}
	return out, nil
}

// Last returns the result of the latest scan.
func (s *StuckDetector) Last() []Stuck {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Stuck, len(s.last))
	for i, st := range s.last {
		st.Finalizers = slices.Clone(st.Finalizers)
		out[i] = st
	}
	return out
}
