package bench

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// BenchmarkInitialList measures what one informer's initial list of the
// standard dataset (10,000 Pods) costs the API server, for each way of
// listing: the server's CPU seconds (kube-apiserver and its embedded etcd are
// one process), the objects read from etcd and from the watch cache, and the
// list's latency (ns/op). It is the measurement behind leanstore's choice of
// initial list (docs/memory.md, "The initial list"):
//
//   - rv0-paged: resourceVersion=0 with limit=500, what client-go's reflector
//     sends when streaming lists are off. The watch cache ignores the limit and
//     answers everything in one page, possibly stale.
//   - consistent-paged: resourceVersion="" with limit=500 and continue tokens,
//     what leanstore's paged LIST sends: a consistent read, served from the
//     watch cache once it has caught up with etcd (ConsistentListFromCache is
//     always on in Kubernetes 1.37).
//   - streaming: a watch with sendInitialEvents=true up to the
//     initial-events-end bookmark (KEP-3157), served from the watch cache.
//
// Each runs on a server with the watch cache on (the default) and off
// (--watch-cache=false), the upper bound of what a server whose cache cannot
// serve a list pays in etcd. Run it with `make listcost`.
func BenchmarkInitialList(b *testing.B) {
	for _, cache := range []bool{true, false} {
		name := "watch-cache=on"
		var args []string
		if !cache {
			name, args = "watch-cache=off", []string{"--watch-cache=false"}
		}
		b.Run(name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			srv, err := apiserver.Start(ctx, apiserver.Options{ExtraArgs: args})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = srv.Stop() }()
			spec := dataset.Standard("listcost")
			if err := dataset.Seed(ctx, srv.Config, spec); err != nil {
				b.Fatal(err)
			}
			cs := kubernetes.NewForConfigOrDie(protobuf(srv.Config))
			for _, l := range initialLists {
				b.Run(l.name, func(b *testing.B) {
					measureList(ctx, b, srv, cs, spec.Namespace, spec.Pods, l.list)
				})
			}
		})
	}
}

// initialLists are the ways of listing BenchmarkInitialList compares; each
// returns the number of Pods it received.
var initialLists = []struct {
	name string
	list func(ctx context.Context, cs kubernetes.Interface, ns string) (int, error)
}{
	{"rv0-paged", func(ctx context.Context, cs kubernetes.Interface, ns string) (int, error) {
		return pagedList(ctx, cs, ns, "0")
	}},
	{"consistent-paged", func(ctx context.Context, cs kubernetes.Interface, ns string) (int, error) {
		return pagedList(ctx, cs, ns, "")
	}},
	{"streaming", streamingList},
}

func pagedList(ctx context.Context, cs kubernetes.Interface, ns, rv string) (int, error) {
	n, cont := 0, ""
	for {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: rv, Limit: 500, Continue: cont})
		if err != nil {
			return n, err
		}
		n += len(l.Items)
		if cont = l.Continue; cont == "" {
			return n, nil
		}
	}
}

func streamingList(ctx context.Context, cs kubernetes.Interface, ns string) (int, error) {
	yes := true
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{
		SendInitialEvents: &yes, AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	n := 0
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Added:
			n++
		case watch.Bookmark:
			if p, ok := ev.Object.(*corev1.Pod); ok && p.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
				return n, nil
			}
		case watch.Error:
			return n, fmt.Errorf("streaming list: %v", ev.Object)
		}
	}
	return n, fmt.Errorf("streaming list ended after %d Pods without the initial-events-end bookmark", n)
}

// measureList runs list b.N times and reports the server's CPU and storage
// reads per list.
func measureList(ctx context.Context, b *testing.B, srv *apiserver.Server, cs kubernetes.Interface, ns string, want int,
	list func(context.Context, kubernetes.Interface, string) (int, error)) {
	proc, err := openProc(srv.PID)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = proc.Close() }()
	storage := func() StorageCounts {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			b.Fatal(err)
		}
		c, err := ParseStorageCounts(bytes.NewReader(body), []schema.GroupResource{{Resource: "pods"}})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	if n, err := list(ctx, cs, ns); err != nil || n != want { // warm up: connections, the cache's first read
		b.Fatalf("warm-up list: %d Pods, %v; want %d", n, err, want)
	}
	before := storage()
	cpu0, _, err := proc.read()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if n, err := list(ctx, cs, ns); err != nil || n != want {
			b.Fatalf("list: %d Pods, %v; want %d", n, err, want)
		}
	}
	cpu1, _, err := proc.read()
	if err != nil {
		b.Fatal(err)
	}
	d := storage().sub(before)
	per := float64(b.N)
	b.ReportMetric((cpu1-cpu0).Seconds()/per, "server-cpu-s/op")
	b.ReportMetric(d.EtcdObjects/per, "etcd-objects/op")
	b.ReportMetric(d.CacheObjects/per+d.StreamObjects/per, "cache-objects/op")
}

// protobuf asks for protobuf, as informers do.
func protobuf(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c.QPS, c.Burst = -1, 0
	return c
}
