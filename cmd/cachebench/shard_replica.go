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
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/shard"
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
	fs := newFlagSet("shard-replica", "One sharded replica for 'cachebench shard', which starts it; not for direct use.", stdout, stderr)
	cf := fs.withCluster(false)
	identity := fs.String("identity", "", "this replica's name")
	static := fs.String("static", "", "static shard i/n instead of Leases")
	leaseNS := fs.String("lease-namespace", "", "namespace of the Leases")
	group := fs.String("group", "cachebench", "shard group")
	lease := shard.LeaseConfig{}
	fs.DurationVar(&lease.LeaseDuration, "lease-duration", 0, "Lease duration")
	fs.DurationVar(&lease.RenewDeadline, "renew-deadline", 0, "renew deadline")
	fs.DurationVar(&lease.RetryPeriod, "retry-period", 0, "retry period")
	profiles := fs.String("heap-profiles", "", "directory for a heap profile at each measure")
	if err := fs.parse(args); err != nil {
		return err
	}
	ns, err := cf.namespace()
	if err != nil {
		return err
	}
	t, err := cf.target()
	if err != nil {
		return err
	}
	cfg := t.Config
	r := &shardReplica{identity: *identity, profiles: *profiles, start: time.Now()}
	r.sampler = bench.StartSampler(ctx, r.start, 5*time.Millisecond)
	defer r.sampler.Stop()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && strings.HasSuffix(req.URL.Path, "/pods") {
				resp.Body = &countedBody{ReadCloser: resp.Body, n: &r.wire}
			}
			return resp, err
		})
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	lease.Namespace, lease.Group, lease.Identity = *leaseNS, *group, *identity
	m, err := replicaMembership(cs, *static, lease)
	if err != nil {
		return err
	}
	r.factory = leanstore.NewSharedInformerFactory(cs, 0, leanstore.WithNamespace(ns), leanstore.WithStripLastApplied(),
		leanstore.WithShard(m, shard.ByObject), leanstore.WithName(*identity))
	r.inf = r.factory.Core().V1().Pods().Informer()
	runCtx, stop := context.WithCancel(ctx)
	defer r.factory.Shutdown()
	defer stop()
	r.factory.StartWithContext(runCtx)

	enc := json.NewEncoder(stdout)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		cmd := sc.Text()
		if cmd == "mark" {
			r.mark = time.Since(r.start)
			continue
		}
		st, err := r.answer(cmd)
		if err != nil {
			return err
		}
		if err := enc.Encode(st); err != nil {
			return err
		}
	}
	return sc.Err()
}

// replicaMembership is a static shard ("i/n") or, when static is "", a
// membership of Leases.
func replicaMembership(cs kubernetes.Interface, static string, lease shard.LeaseConfig) (*shard.Membership, error) {
	if static == "" {
		return shard.NewLeaseMembership(cs, lease)
	}
	var i, n int
	if _, err := fmt.Sscanf(static, "%d/%d", &i, &n); err != nil {
		return nil, usageError{fmt.Errorf("--static %q: want i/n", static)}
	}
	return shard.Static(i, n)
}

// shardReplica is one replica process of 'cachebench shard'.
type shardReplica struct {
	identity string
	profiles string
	start    time.Time
	sampler  *bench.Sampler
	factory  *leanstore.TypedFactory
	inf      cache.SharedIndexInformer
	wire     atomic.Int64
	// mark is when the window of the next measure's peak starts.
	mark     time.Duration
	measures int
}

// answer answers a command of the parent: the replica's state, with its
// keys ("keys") or its heap, RSS, CPU and wire bytes ("measure").
func (r *shardReplica) answer(cmd string) (replicaState, error) {
	st := replicaState{Identity: r.identity, Synced: r.inf.HasSynced(), Held: len(r.inf.GetStore().ListKeys())}
	if s := r.factory.Status(); len(s) == 1 && s[0].Shard != nil {
		sh := s[0].Shard
		st.Members, st.Rebalancing, st.Rebalances = sh.Members, sh.Rebalancing, sh.Rebalances
		st.SkippedListed, st.SkippedEvents = sh.SkippedListed, sh.SkippedEvents
	}
	switch cmd {
	case "keys":
		st.Keys = r.inf.GetStore().ListKeys()
	case "measure":
		st.PeakHeap, _ = r.sampler.Peak(r.mark, time.Since(r.start))
		runtime.GC()
		st.LiveHeap = heapObjectBytes()
		st.RSS = bench.ProcessRSS(os.Getpid())
		st.CPUSeconds = selfCPUSeconds()
		st.WireBytes = r.wire.Load()
		if r.profiles != "" {
			r.measures++
			if err := writeHeapProfile(filepath.Join(r.profiles, fmt.Sprintf("%s.%d.heap.pprof", r.identity, r.measures))); err != nil {
				return st, err
			}
		}
	}
	return st, nil
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
