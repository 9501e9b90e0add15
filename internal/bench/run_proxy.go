package bench

import (
	"bytes"
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/pkg/testkit/faults"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// proxyServer adapts the fault proxy to what bench needs.
type proxyServer struct {
	p *faults.Proxy
}

func (s proxyServer) EndWatches(r ResourceRef) int {
	return s.p.EndWatches(faults.Match{Resource: r.Resource, Namespace: r.Namespace}, faults.Gone())
}

func (s proxyServer) ResetCounts() { s.p.ResetCounts() }

func (s proxyServer) Counts(resource string) Requests {
	c := s.p.Counts().ByResourceVerb[resource]
	return Requests{List: c[faults.List], WatchList: c[faults.WatchList], Watch: c[faults.Watch]}
}

// storageReader reads the local server's storage counters for refs from its
// /metrics, directly (not through the proxy, whose counts are the child's).
func storageReader(cfg *rest.Config, refs []ResourceRef) func(context.Context) (StorageCounts, error) {
	grs := make([]schema.GroupResource, len(refs))
	for i, r := range refs {
		grs[i] = r.GroupResource()
	}
	return func(ctx context.Context) (StorageCounts, error) {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return StorageCounts{}, err
		}
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return StorageCounts{}, err
		}
		return ParseStorageCounts(bytes.NewReader(body), grs)
	}
}
