package main

import (
	"bytes"
	"context"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/pkg/faults"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// proxyServer adapts the fault proxy to what bench needs.
type proxyServer struct {
	p  *faults.Proxy
	cs kubernetes.Interface // straight to the server, not through the proxy
}

// EndWatches forces a re-list as a compaction does: every watch of r from the
// server's current resourceVersion or older expires from now on (410), the
// live ones at once. A 410 on the live watches alone would not force one: a
// watch from the same resourceVersion that then works shows nothing was
// missed, and leanstore resumes with it instead of listing. A Lease written
// and deleted in r's namespace moves the server past the compaction, so that
// the re-list's resourceVersion, and the watch from it, are newer; where that
// write is refused (a cluster's RBAC), only the live watches are ended.
func (s proxyServer) EndWatches(r bench.ResourceRef) int {
	match := faults.Match{Resource: r.Resource, Namespace: r.Namespace}
	if rv, ok := s.compactionPoint(r.Namespace); ok {
		compacted := match
		compacted.Verb, compacted.ResourceVersionAtMost = faults.Watch, rv
		s.p.AddRule(faults.Rule{Match: compacted, Fault: faults.Gone()})
	}
	return s.p.EndWatches(match, faults.Gone())
}

// compactionPoint returns the server's current resourceVersion after moving
// the server past it with a write in namespace.
func (s proxyServer) compactionPoint(namespace string) (uint64, bool) {
	if s.cs == nil || namespace == "" {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leases := s.cs.CoordinationV1().Leases(namespace)
	l, err := leases.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, false
	}
	rv, err := strconv.ParseUint(l.ResourceVersion, 10, 64)
	if err != nil {
		return 0, false
	}
	lease, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{GenerateName: "cachebench-compaction-"}}, metav1.CreateOptions{})
	if err != nil {
		return 0, false
	}
	_ = leases.Delete(ctx, lease.Name, metav1.DeleteOptions{}) // the create moved the server on already
	return rv, true
}

func (s proxyServer) ResetCounts() { s.p.ResetCounts() }

func (s proxyServer) Counts(resource string) bench.Requests {
	c := s.p.Counts().ByResourceVerb[resource]
	return bench.Requests{List: c[faults.List], WatchList: c[faults.WatchList], Watch: c[faults.Watch]}
}

// storageReader reads the local server's storage counters for refs from its
// /metrics, directly (not through the proxy, whose counts are the child's).
func storageReader(cfg *rest.Config, refs []bench.ResourceRef) func(context.Context) (bench.StorageCounts, error) {
	grs := make([]schema.GroupResource, len(refs))
	for i, r := range refs {
		grs[i] = r.GroupResource()
	}
	return func(ctx context.Context) (bench.StorageCounts, error) {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return bench.StorageCounts{}, err
		}
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return bench.StorageCounts{}, err
		}
		return bench.ParseStorageCounts(bytes.NewReader(body), grs)
	}
}
