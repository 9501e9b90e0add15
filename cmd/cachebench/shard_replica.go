package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/pkg/leanstore"
)

// replicaState is what a shard replica reports to `cachebench shard` for
// each command it reads on stdin.
type replicaState struct {
	Identity    string   `json:"identity"`
	Synced      bool     `json:"synced"`
	Members     []string `json:"members"`
	Rebalancing bool     `json:"rebalancing"`
	Rebalances  int64    `json:"rebalances"`
	Held        int      `json:"held"`
	// Keys are the names of the Pods held ("keys" only).
	Keys []string `json:"keys,omitempty"`
	// The rest is filled by "measure" only. PeakHeap is the highest heap
	// (live and unswept objects) sampled since the last "mark"; LiveHeap is
	// the heap after a collection, at the time of the command.
	PeakHeap   uint64  `json:"peakHeap,omitempty"`
	LiveHeap   uint64  `json:"liveHeap,omitempty"`
	RSS        uint64  `json:"rss,omitempty"`
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
	// WireBytes are the bytes of Pod lists and watches received since start.
	WireBytes int64 `json:"wireBytes,omitempty"`
	// SkippedListed and SkippedEvents are the objects of other shards dropped.
	SkippedListed int64 `json:"skippedListed,omitempty"`
	SkippedEvents int64 `json:"skippedEvents,omitempty"`
}

// runShardReplica is the hidden `cachebench shard-replica` command: one
// replica of a test controller that caches the Pods of a namespace sharded by
// object, driven by `cachebench shard` over stdin and stdout.
func runShardReplica(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("shard-replica", "One sharded replica for 'cachebench shard', which starts it; not for direct use.", stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	ns := fs.String("namespace", "", "namespace of the Pods")
	identity := fs.String("identity", "", "this replica's name")
	static := fs.String("static", "", "static shard i/n instead of Leases")
	leaseNS := fs.String("lease-namespace", "", "namespace of the Leases")
	group := fs.String("group", "cachebench", "shard group")
	lease := leanstore.LeaseConfig{}
	fs.DurationVar(&lease.LeaseDuration, "lease-duration", 0, "Lease duration")
	fs.DurationVar(&lease.RenewDeadline, "renew-deadline", 0, "renew deadline")
	fs.DurationVar(&lease.RetryPeriod, "retry-period", 0, "retry period")
	profiles := fs.String("heap-profiles", "", "directory for a heap profile at each measure")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	start := time.Now()
	sampler := bench.StartSampler(ctx, start, 5*time.Millisecond)
	defer sampler.Stop()
	cfg, err := loadKubeconfig(*kubeconfig)
	if err != nil {
		return err
	}
	var wire atomic.Int64
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil && strings.HasSuffix(r.URL.Path, "/pods") {
				resp.Body = &countedBody{ReadCloser: resp.Body, n: &wire}
			}
			return resp, err
		})
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var m *leanstore.Membership
	if *static != "" {
		var i, n int
		if _, err := fmt.Sscanf(*static, "%d/%d", &i, &n); err != nil {
			return usageError{fmt.Errorf("--static %q: want i/n", *static)}
		}
		m, err = leanstore.StaticShards(i, n)
	} else {
		lease.Namespace, lease.Group, lease.Identity = *leaseNS, *group, *identity
		m, err = leanstore.NewLeaseMembership(cs, lease)
	}
	if err != nil {
		return err
	}
	factory := leanstore.NewSharedInformerFactory(cs, 0, leanstore.WithNamespace(*ns), leanstore.WithStripLastApplied(),
		leanstore.WithShard(m, leanstore.ShardByObject), leanstore.WithName(*identity))
	inf := factory.Core().V1().Pods().Informer()
	runCtx, stop := context.WithCancel(ctx)
	defer factory.Shutdown()
	defer stop()
	factory.StartWithContext(runCtx)

	enc := json.NewEncoder(stdout)
	var mark time.Duration
	measures := 0
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		cmd := sc.Text()
		if cmd == "mark" {
			mark = time.Since(start)
			continue
		}
		st := replicaState{Identity: *identity, Synced: inf.HasSynced(), Held: len(inf.GetStore().ListKeys())}
		if s := factory.Status(); len(s) == 1 && s[0].Shard != nil {
			sh := s[0].Shard
			st.Members, st.Rebalancing, st.Rebalances = sh.Members, sh.Rebalancing, sh.Rebalances
			st.SkippedListed, st.SkippedEvents = sh.SkippedListed, sh.SkippedEvents
		}
		switch cmd {
		case "keys":
			st.Keys = inf.GetStore().ListKeys()
		case "measure":
			st.PeakHeap, _ = sampler.Peak(mark, time.Since(start))
			runtime.GC()
			st.LiveHeap = heapObjectBytes()
			st.RSS = bench.ProcessRSS(os.Getpid())
			st.CPUSeconds = selfCPUSeconds()
			st.WireBytes = wire.Load()
			if *profiles != "" {
				measures++
				if err := writeHeapProfile(filepath.Join(*profiles, fmt.Sprintf("%s.%d.heap.pprof", *identity, measures))); err != nil {
					return err
				}
			}
		}
		if err := enc.Encode(st); err != nil {
			return err
		}
	}
	return sc.Err()
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countedBody counts the bytes read from a response body.
type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func heapObjectBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// selfCPUSeconds is the process's user and system CPU time.
func selfCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
