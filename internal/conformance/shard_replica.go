package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/shard"
)

// ShardReplicaEnv names the environment variable through which RunShards
// hands a replica process its spec. RunShards starts its replicas by running
// the current executable (a test binary) with this variable set; that
// binary's TestMain must then call ServeShardReplica, before it starts
// anything else, and exit with its result.
const ShardReplicaEnv = "CACHETUNE_CONFORMANCE_SHARD_REPLICA"

// replicaSpec is what a replica process runs: one sharded leanstore Pod
// informer of Flavor, over the Pods that match Selector in every namespace,
// with a Lease membership.
type replicaSpec struct {
	Kubeconfig     string        `json:"kubeconfig"`
	Identity       string        `json:"identity"`
	LeaseNamespace string        `json:"leaseNamespace"`
	Group          string        `json:"group"`
	Selector       string        `json:"selector"`
	Flavor         Flavor        `json:"flavor"`
	By             shard.By      `json:"by"`
	LeaseDuration  time.Duration `json:"leaseDuration"`
	RenewDeadline  time.Duration `json:"renewDeadline"`
	RetryPeriod    time.Duration `json:"retryPeriod"`
}

// replicaLine is one line a replica writes on stdout: an event its handlers
// were told, as it was told (Event is "add", "update" or "delete", Key and RV
// the object's), or the answer to a command (State).
type replicaLine struct {
	Event string        `json:"e,omitempty"`
	Key   string        `json:"k,omitempty"`
	RV    string        `json:"rv,omitempty"`
	State *replicaState `json:"state,omitempty"`
}

// replicaState is a replica's answer to "status" and "state".
type replicaState struct {
	Synced      bool     `json:"synced"`
	Members     []string `json:"members"`
	Generation  uint64   `json:"generation"`
	Rebalancing bool     `json:"rebalancing"`
	Rebalances  int64    `json:"rebalances"`
	// Lists counts the informer's lists: the first, and one per rebalance.
	Lists int `json:"lists"`
	Held  int `json:"held"`
	// Store is the informer's store ("state" only).
	Store state `json:"store,omitempty"`
	// LastSync are the times the informer's LastSyncResourceVersion went
	// backwards ("state" only).
	LastSync []string `json:"lastSync,omitempty"`
	// RebalanceDips counts the times LastSyncResourceVersion went back
	// during a rebalance, which is expected ("state" only).
	RebalanceDips int `json:"rebalanceDips,omitempty"`
	// Error is the shard's configuration error, if any.
	Error string `json:"error,omitempty"`
}

// ServeShardReplica runs the replica whose spec (JSON, from ShardReplicaEnv)
// it is given until in ends: it writes a line on out for every event its
// handlers are told, and answers each command read from in ("status", or
// "state" with the store's content) with a line. When in ends it stops the
// informer and its membership, which releases the replica's Lease.
func ServeShardReplica(ctx context.Context, spec string, in io.Reader, out io.Writer) error {
	var sp replicaSpec
	if err := json.Unmarshal([]byte(spec), &sp); err != nil {
		return fmt.Errorf("shard replica spec %q: %w", spec, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", sp.Kubeconfig)
	if err != nil {
		return fmt.Errorf("shard replica %s: kubeconfig: %w", sp.Identity, err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	m, err := shard.NewLeaseMembership(cs, shard.LeaseConfig{Namespace: sp.LeaseNamespace, Group: sp.Group, Identity: sp.Identity,
		LeaseDuration: sp.LeaseDuration, RenewDeadline: sp.RenewDeadline, RetryPeriod: sp.RetryPeriod})
	if err != nil {
		return err
	}
	inf, run, status, err := leanstoreInformer(sp.Flavor, cfg, sp.Selector, indexersOf(sp.Flavor), leanstore.WithShard(m, sp.By), leanstore.WithName(sp.Identity))
	if err != nil {
		return err
	}
	lines := &lineWriter{enc: json.NewEncoder(out)}
	if _, err := inf.AddEventHandler(lines.handler()); err != nil {
		return err
	}

	runCtx, stop := context.WithCancel(ctx)
	// A dip of LastSyncResourceVersion is expected while a rebalance hands
	// the reflector the objects that came to this replica (and for a moment
	// after its end, before the reflector has taken the closing bookmark):
	// they keep their own resourceVersions, older than the bookmarks of the
	// events skipped while they were another replica's.
	rv := &rvMonitor{excuse: func() bool {
		s := status()
		if len(s) != 1 || s[0].Shard == nil {
			return false
		}
		return s[0].Shard.Rebalancing || time.Since(s[0].Shard.LastRebalance) < time.Second
	}}
	var wg sync.WaitGroup
	wg.Go(func() { run(runCtx) })
	wg.Go(func() { rv.run(runCtx, inf) })
	defer func() {
		stop()
		wg.Wait()
		<-m.Done()
	}()

	sc := bufio.NewScanner(in)
	for sc.Scan() {
		lines.emit(replicaLine{State: replicaStateOf(sc.Text(), inf, status, rv)})
		if err := lines.err(); err != nil {
			return fmt.Errorf("shard replica %s: write: %w", sp.Identity, err)
		}
	}
	return sc.Err()
}

// replicaStateOf answers a command of the test ("status", or "state" with
// the store and the resourceVersions seen).
func replicaStateOf(cmd string, inf cache.SharedIndexInformer, status func() []leanstore.Status, rv *rvMonitor) *replicaState {
	st := &replicaState{Synced: inf.HasSynced(), Held: len(inf.GetStore().ListKeys())}
	if s := status(); len(s) == 1 && s[0].Shard != nil {
		sh := s[0].Shard
		st.Members, st.Generation, st.Rebalancing, st.Rebalances, st.Error = sh.Members, sh.Generation, sh.Rebalancing, sh.Rebalances, sh.Error
		st.Lists = s[0].Lists
	}
	switch cmd {
	case "status":
	case "state":
		st.Store, st.LastSync = storeState(inf), rv.result()
		st.RebalanceDips = rv.excusedDips()
	default:
		st.Error = fmt.Sprintf("unknown command %q", cmd)
	}
	return st
}

// lineWriter writes a replica's lines (its handlers' events and its answers)
// to the test, one JSON object a line, from any goroutine; the first write
// error stops it.
type lineWriter struct {
	mu     sync.Mutex
	enc    *json.Encoder
	encErr error
}

func (l *lineWriter) emit(line replicaLine) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.encErr == nil {
		l.encErr = l.enc.Encode(line)
	}
}

func (l *lineWriter) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.encErr
}

// handler reports every add, update and delete as a line.
func (l *lineWriter) handler() cache.ResourceEventHandler {
	told := func(what string, obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if m, err := metaOf(obj); err == nil {
			l.emit(replicaLine{Event: what, Key: key(m.GetNamespace(), m.GetName()), RV: m.GetResourceVersion()})
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { told("add", obj) },
		UpdateFunc: func(_, obj any) { told("update", obj) },
		DeleteFunc: func(obj any) { told("delete", obj) },
	}
}
