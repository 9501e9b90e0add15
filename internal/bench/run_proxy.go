package bench

import (
	"bytes"
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/pkg/testkit/faults"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// proxyServer is the fault proxy between the children and the server, as
// the Server a child's re-lists are forced through.
type proxyServer struct {
	p *faults.Proxy
	// config reaches the server through the proxy, with no credentials: the
	// proxy authenticates every request as the user of the run's cluster.
	config *rest.Config
}

// startProxy puts the fault proxy in front of the server cfg reaches. The
// proxy authenticates upstream with cfg's own credentials, as kubectl proxy
// does, so that any kubeconfig works: a client certificate (kind, minikube,
// kubeadm), a token or an exec plugin. The children reach the proxy over
// plain HTTP on 127.0.0.1 without credentials of their own.
func startProxy(cfg *rest.Config) (proxyServer, error) {
	p, err := faults.Start(cfg, faults.WithUpstreamCredentials())
	if err != nil {
		return proxyServer{}, fmt.Errorf("start the fault proxy: %w", err)
	}
	return proxyServer{p: p, config: p.Config(cfg)}, nil
}

func (s proxyServer) close() { _ = s.p.Close() }

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
