package main

import (
	"bytes"
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// proxyServer adapts the fault proxy to what bench needs.
type proxyServer struct {
	p *faults.Proxy
}

func (s proxyServer) EndWatches(r bench.ResourceRef) int {
	return s.p.EndWatches(faults.Match{Resource: r.Resource, Namespace: r.Namespace}, faults.Gone())
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
