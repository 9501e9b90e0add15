package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/internal/cluster"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// shardReport is what `cachebench shard` measured.
type shardReport struct {
	Command   string    `json:"command"`
	Started   time.Time `json:"started"`
	GoVersion string    `json:"goVersion"`
	CPUs      int       `json:"cpus"`
	Pods      int       `json:"pods"`
	// Scale is one run per shard count: static shards i/n.
	Scale []shardScale `json:"scale,omitempty"`
	// Failover is replicas coordinated by Leases: one killed, one started.
	Failover *shardFailover `json:"failover,omitempty"`
}

type shardScale struct {
	Shards   int            `json:"shards"`
	Seconds  float64        `json:"secondsToPartition"`
	Replicas []replicaState `json:"replicas"`
}

type shardFailover struct {
	LeaseDuration string `json:"leaseDuration"`
	// Stable is the three replicas once they partition the Pods.
	Stable []replicaState `json:"stable"`
	// Killed is the replica killed with SIGKILL; AfterKill the survivors once
	// they partition the Pods again, KillSeconds how long that took.
	Killed      string         `json:"killed"`
	KillSeconds float64        `json:"killSeconds"`
	AfterKill   []replicaState `json:"afterKill"`
	// Joined is the replica started next; AfterJoin all three once they
	// partition the Pods, JoinSeconds how long that took. Peaks are those of
	// the join window.
	Joined      string         `json:"joined"`
	JoinSeconds float64        `json:"joinSeconds"`
	AfterJoin   []replicaState `json:"afterJoin"`
	// JoinPeakRatios are each replica's heap peak in the join window over
	// its larger live heap (before or after); MaxJoinPeakRatio the highest.
	JoinPeakRatios   map[string]float64 `json:"joinPeakRatios"`
	MaxJoinPeakRatio float64            `json:"maxJoinPeakRatio"`
}

type shardOptions struct {
	cluster                     *clusterFlags
	namespace, outDir, out      string
	output                      string
	heapProfiles                string
	pods                        int
	shards                      []int
	failover                    bool
	leaseDuration, renew, retry time.Duration
	timeout                     time.Duration
}

func runShard(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("shard", `Measures leanstore's sharding (WithShard) with several replica processes of a
small controller that caches the Pods of a namespace, each in its own process:

  - scale: for each count in --shards, that many static shards (i of n) split
    the Pods; reports each replica's Pods held, live heap, heap peak, CPU and
    the bytes of Pods it still received from the server;
  - failover: three replicas coordinated by Leases split the Pods; one is
    killed (SIGKILL, its Lease left to expire) and the survivors take its Pods;
    then a fourth starts and takes its share. Reports the times, and each
    replica's heap peak in the join over its live heap.

After each step it checks, against a fresh consistent LIST, that every Pod is
held by exactly one live replica. With no cluster flag it starts the local
kube-apiserver and seeds --pods Pods of the standard dataset into the namespace
-n (cachebench). Given a cluster (--kubeconfig, --context or another of
kubectl's cluster flags), it uses the Pods already in the namespace -n (else the
context's, else cachebench) and seeds nothing; the replicas reach the cluster
with the same flags, and it first checks that the user may list and watch the
Pods and write Leases there.

Prints a table (-o json: the JSON report); writes the JSON report to
--out-dir (cachebench-shard.json).`, stdout, stderr)
	var o shardOptions
	o.cluster = fs.withCluster(false)
	out := fs.withOutput("table", "json")
	fs.IntVar(&o.pods, "pods", 10000, "Pods to seed on the local server")
	shards := fs.String("shards", "1,2,4", "shard counts of the scale run, comma-separated; empty skips it")
	fs.BoolVar(&o.failover, "failover", true, "run the failover (kill and join) with Leases")
	fs.DurationVar(&o.leaseDuration, "lease-duration", 15*time.Second, "Lease duration (client-go leader election's default)")
	fs.DurationVar(&o.renew, "renew-deadline", 10*time.Second, "renew deadline")
	fs.DurationVar(&o.retry, "retry-period", 2*time.Second, "retry period")
	fs.DurationVar(&o.timeout, "step-timeout", 5*time.Minute, "how long a step may take to reach a partition")
	fs.StringVar(&o.outDir, "out-dir", "out", "directory for the JSON report (cachebench-shard.json); empty writes none")
	fs.StringVar(&o.out, "out", "", "write the JSON report to this file")
	fs.deprecated("out", "--out-dir (cachebench-shard.json in it)")
	fs.StringVar(&o.heapProfiles, "heap-profiles", "", "directory for a heap profile of each replica at each measurement (<replica>.<n>.heap.pprof; allocations since start included)")
	if err := fs.parse(args); err != nil {
		return err
	}
	o.output = out.value
	for _, f := range strings.Split(*shards, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return usageError{fmt.Errorf("--shards: %q is not a positive count", f)}
		}
		o.shards = append(o.shards, n)
	}
	return o.run(ctx, args, stdout, stderr)
}

func (o *shardOptions) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	rep := shardReport{Command: "cachebench shard " + strings.Join(o.cluster.redact(args), " "), Started: time.Now(),
		GoVersion: runtime.Version(), CPUs: runtime.NumCPU()}
	cfg, clusterArgs, stop, err := o.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer stop()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	// The replicas' stderr: one writer for all, written from a goroutine per
	// replica unless it is a file.
	h := &shardHarness{o: o, cs: cs, exe: exe, clusterArgs: clusterArgs, stderr: &lockedWriter{w: stderr}}
	truth, err := h.truth(ctx)
	if err != nil {
		return err
	}
	rep.Pods = len(truth)

	for _, n := range o.shards {
		sc, err := h.staticShards(ctx, n)
		if err != nil {
			return err
		}
		rep.Scale = append(rep.Scale, sc)
		fmt.Fprintf(stderr, "%d shards partitioned in %.1fs\n", n, sc.Seconds)
	}

	if o.failover {
		f, err := h.failover(ctx)
		if err != nil {
			return fmt.Errorf("failover: %w", err)
		}
		rep.Failover = f
	}
	if o.output == "json" {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		writeShardTable(stdout, rep)
	}
	if o.outDir != "" {
		if err := writeShardJSON(filepath.Join(o.outDir, "cachebench-shard.json"), rep); err != nil {
			return err
		}
	}
	return writeShardJSON(o.out, rep)
}

// connect starts the local server and seeds it, or checks the cluster the
// flags name, and returns its config, the flags that reach it for the
// replicas, and what stops the local server.
func (o *shardOptions) connect(ctx context.Context, stderr io.Writer) (*rest.Config, []string, func(), error) {
	if !o.cluster.selected() {
		noteKubeconfigEnv(stderr, "shard")
		o.namespace = o.cluster.localNamespace()
		srv, err := apiserver.Start(ctx, apiserver.Options{Progress: stderr})
		if err != nil {
			return nil, nil, nil, err
		}
		stop := func() { _ = srv.Stop() }
		spec := dataset.Standard(o.namespace)
		spec.Pods, spec.Progress = o.pods, dataset.ProgressPrinter(stderr)
		if err := dataset.Seed(ctx, srv.Config, spec); err != nil {
			stop()
			return nil, nil, nil, err
		}
		return srv.Config, []string{"--kubeconfig=" + srv.Kubeconfig, "--namespace=" + o.namespace}, stop, nil
	}
	var err error
	if o.namespace, err = o.cluster.namespace(); err != nil {
		return nil, nil, nil, err
	}
	t, err := o.cluster.target()
	if err != nil {
		return nil, nil, nil, err
	}
	perms := cluster.Allow("", "pods", o.namespace, "list", "watch")
	if o.failover {
		perms = append(perms, cluster.Allow("coordination.k8s.io", "leases", o.namespace, "get", "list", "watch", "create", "update", "delete")...)
	}
	if err := t.Check(ctx, perms...); err != nil {
		return nil, nil, nil, err
	}
	return t.Config, append(o.cluster.args(), "--namespace="+o.namespace), func() {}, nil
}

// staticShards starts n static shard replicas, waits until they partition
// the Pods, measures each and stops them.
func (h *shardHarness) staticShards(ctx context.Context, n int) (shardScale, error) {
	var reps []*replicaProc
	defer func() { h.stopAll(reps) }()
	started := time.Now()
	for i := range n {
		r, err := h.start(ctx, fmt.Sprintf("static-%d-of-%d", i, n), "--static", fmt.Sprintf("%d/%d", i, n))
		if err != nil {
			return shardScale{}, err
		}
		reps = append(reps, r)
	}
	if err := h.partitioned(ctx, reps, n); err != nil {
		return shardScale{}, fmt.Errorf("%d static shards: %w", n, err)
	}
	sc := shardScale{Shards: n, Seconds: time.Since(started).Seconds()}
	for _, r := range reps {
		st, err := r.ask("measure")
		if err != nil {
			return sc, err
		}
		sc.Replicas = append(sc.Replicas, st)
	}
	return sc, nil
}

// writeShardJSON writes the report to path, unless path is "".
func writeShardJSON(path string, rep shardReport) error {
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func (h *shardHarness) failover(ctx context.Context) (*shardFailover, error) {
	o := h.o
	f := &shardFailover{LeaseDuration: o.leaseDuration.String()}
	lease := func(id string) (*replicaProc, error) {
		return h.start(ctx, id, "--lease-namespace", o.namespace, "--lease-duration", o.leaseDuration.String(),
			"--renew-deadline", o.renew.String(), "--retry-period", o.retry.String())
	}
	var reps []*replicaProc
	defer func() { h.stopAll(reps) }()
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		r, err := lease(id)
		if err != nil {
			return nil, err
		}
		reps = append(reps, r)
	}
	if err := h.partitioned(ctx, reps, 3); err != nil {
		return nil, err
	}
	var err error
	if f.Stable, err = measureAll(reps); err != nil {
		return nil, err
	}

	// SIGKILL: the Lease stays until it expires.
	victim := reps[0]
	f.Killed = victim.id
	killed := time.Now()
	_ = victim.cmd.Process.Signal(syscall.SIGKILL)
	_ = victim.cmd.Wait()
	victim.done = true
	reps = reps[1:]
	markAll(reps)
	if err := h.partitioned(ctx, reps, 2); err != nil {
		return nil, fmt.Errorf("after killing %s: %w", victim.id, err)
	}
	f.KillSeconds = time.Since(killed).Seconds()
	if f.AfterKill, err = measureAll(reps); err != nil {
		return nil, err
	}
	fmt.Fprintf(h.stderr, "survivors took %s's Pods in %.1fs\n", victim.id, f.KillSeconds)

	markAll(reps)
	joined := time.Now()
	d, err := lease("replica-d")
	if err != nil {
		return nil, err
	}
	reps = append(reps, d)
	f.Joined = d.id
	if err := h.partitioned(ctx, reps, 3); err != nil {
		return nil, fmt.Errorf("after starting %s: %w", d.id, err)
	}
	f.JoinSeconds = time.Since(joined).Seconds()
	if f.AfterJoin, err = measureAll(reps); err != nil {
		return nil, err
	}
	f.JoinPeakRatios = map[string]float64{}
	before := map[string]uint64{}
	for _, st := range f.AfterKill {
		before[st.Identity] = st.LiveHeap
	}
	for _, st := range f.AfterJoin {
		live := max(before[st.Identity], st.LiveHeap)
		if live == 0 {
			continue
		}
		r := float64(st.PeakHeap) / float64(live)
		f.JoinPeakRatios[st.Identity] = r
		f.MaxJoinPeakRatio = max(f.MaxJoinPeakRatio, r)
	}
	fmt.Fprintf(h.stderr, "%s took its share in %.1fs; highest heap peak %.2fx the live heap\n", d.id, f.JoinSeconds, f.MaxJoinPeakRatio)
	return f, nil
}

// shardHarness starts replica processes and checks them against the server.
type shardHarness struct {
	o   *shardOptions
	cs  kubernetes.Interface
	exe string
	// clusterArgs reach the cluster and the namespace, for the replicas.
	clusterArgs []string
	stderr      io.Writer
}

// replicaProc is one `cachebench shard-replica` process.
type replicaProc struct {
	id   string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	done bool
}

func (h *shardHarness) start(ctx context.Context, id string, extra ...string) (*replicaProc, error) {
	args := append(append([]string{"shard-replica", "--identity", id}, h.clusterArgs...), extra...)
	if h.o.heapProfiles != "" {
		if err := os.MkdirAll(h.o.heapProfiles, 0o755); err != nil {
			return nil, err
		}
		args = append(args, "--heap-profiles", h.o.heapProfiles)
	}
	cmd := exec.CommandContext(ctx, h.exe, args...)
	cmd.Stderr = h.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start replica %s: %w", id, err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	return &replicaProc{id: id, cmd: cmd, in: in, out: sc}, nil
}

func (r *replicaProc) ask(cmd string) (replicaState, error) {
	var st replicaState
	if _, err := fmt.Fprintln(r.in, cmd); err != nil {
		return st, fmt.Errorf("replica %s: %w", r.id, err)
	}
	if !r.out.Scan() {
		return st, fmt.Errorf("replica %s ended: %v", r.id, r.out.Err())
	}
	if err := json.Unmarshal(r.out.Bytes(), &st); err != nil {
		return st, fmt.Errorf("replica %s wrote %q: %w", r.id, truncateString(r.out.Text(), 200), err)
	}
	return st, nil
}

func truncateString(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func markAll(reps []*replicaProc) {
	for _, r := range reps {
		_, _ = fmt.Fprintln(r.in, "mark")
	}
}

func measureAll(reps []*replicaProc) ([]replicaState, error) {
	var out []replicaState
	for _, r := range reps {
		st, err := r.ask("measure")
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// stopAll ends the replicas: stdin closed, then SIGTERM, so that a Lease
// replica releases its Lease.
func (h *shardHarness) stopAll(reps []*replicaProc) {
	for _, r := range reps {
		if r.done {
			continue
		}
		_ = r.in.Close()
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, r := range reps {
		if !r.done {
			_ = r.cmd.Wait()
			r.done = true
		}
	}
}

// truth is a fresh consistent LIST of the namespace's Pods, as keys.
func (h *shardHarness) truth(ctx context.Context) (map[string]bool, error) {
	list, err := h.cs.CoreV1().Pods(h.o.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pods in %s: %w", h.o.namespace, err)
	}
	out := make(map[string]bool, len(list.Items))
	for _, p := range list.Items {
		out[p.Namespace+"/"+p.Name] = true
	}
	return out, nil
}

// partitioned waits until the replicas have a ring of members members, none
// rebalancing, and hold every Pod of a fresh consistent LIST exactly once.
func (h *shardHarness) partitioned(ctx context.Context, reps []*replicaProc, members int) error {
	deadline := time.Now().Add(h.o.timeout)
	var why string
	for time.Now().Before(deadline) {
		why = h.partitionProblem(ctx, reps, members)
		if why == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return errors.New("no partition within " + h.o.timeout.String() + ": " + why)
}

func (h *shardHarness) partitionProblem(ctx context.Context, reps []*replicaProc, members int) string {
	holders := map[string]int{}
	for _, r := range reps {
		st, err := r.ask("state")
		if err != nil {
			return err.Error()
		}
		if !st.Synced || st.Rebalancing || len(st.Members) != members {
			return fmt.Sprintf("%s: synced %v, rebalancing %v, members %v", r.id, st.Synced, st.Rebalancing, st.Members)
		}
	}
	for _, r := range reps {
		st, err := r.ask("keys")
		if err != nil {
			return err.Error()
		}
		for _, k := range st.Keys {
			holders[k]++
		}
	}
	truth, err := h.truth(ctx)
	if err != nil {
		return err.Error()
	}
	var missing, twice, extra int
	for k := range truth {
		switch holders[k] {
		case 0:
			missing++
		case 1:
		default:
			twice++
		}
	}
	for k := range holders {
		if !truth[k] {
			extra++
		}
	}
	if missing+twice+extra > 0 {
		return fmt.Sprintf("%d Pods held by nobody, %d by more than one, %d held but gone", missing, twice, extra)
	}
	return ""
}

func writeShardTable(w io.Writer, rep shardReport) {
	mib := func(b uint64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }
	row := func(st replicaState) {
		ratio := 0.0
		if st.LiveHeap > 0 {
			ratio = float64(st.PeakHeap) / float64(st.LiveHeap)
		}
		fmt.Fprintf(w, "  %-18s %6d  %8s  %8s  %6.2f  %6.1f  %8.1f\n", st.Identity, st.Held, mib(st.LiveHeap), mib(st.PeakHeap), ratio, st.CPUSeconds, float64(st.WireBytes)/1e6)
	}
	header := func() {
		fmt.Fprintf(w, "  %-18s %6s  %8s  %8s  %6s  %6s  %8s\n", "replica", "pods", "live MiB", "peak MiB", "peak/l", "CPU s", "MB recv")
	}
	fmt.Fprintf(w, "%d Pods\n", rep.Pods)
	for _, sc := range rep.Scale {
		fmt.Fprintf(w, "\n%d static shard(s), partitioned in %.1fs (peaks: since the replica started)\n", sc.Shards, sc.Seconds)
		header()
		for _, st := range sc.Replicas {
			row(st)
		}
	}
	if f := rep.Failover; f != nil {
		fmt.Fprintf(w, "\nLease membership (duration %s): three replicas\n", f.LeaseDuration)
		header()
		for _, st := range f.Stable {
			row(st)
		}
		fmt.Fprintf(w, "\n%s killed (SIGKILL): survivors hold every Pod once after %.1fs (peaks: since the kill)\n", f.Killed, f.KillSeconds)
		header()
		for _, st := range f.AfterKill {
			row(st)
		}
		fmt.Fprintf(w, "\n%s started: every Pod held once after %.1fs (peaks: since the start)\n", f.Joined, f.JoinSeconds)
		header()
		for _, st := range f.AfterJoin {
			row(st)
		}
		ids := make([]string, 0, len(f.JoinPeakRatios))
		for id := range f.JoinPeakRatios {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		fmt.Fprintf(w, "join peak over the larger live heap (before or after):")
		for _, id := range ids {
			fmt.Fprintf(w, " %s %.2f", id, f.JoinPeakRatios[id])
		}
		fmt.Fprintf(w, "; highest %.2f\n", f.MaxJoinPeakRatio)
	}
}

// lockedWriter serialises the writes of several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
