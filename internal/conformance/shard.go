package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/pkg/shard"
)

// ShardConfig is what RunShards needs. Server and Kubeconfig are required;
// zero fields of the rest take the defaults in the comments.
type ShardConfig struct {
	// Server is the API server, for the writer and the truth.
	Server *rest.Config
	// Kubeconfig is the path of a kubeconfig of the same server and an
	// identity allowed to do everything, for the replica processes.
	Kubeconfig string
	// InitialPods is the number of Pods created before the replicas start (2000).
	InitialPods int
	// By is what decides an object's shard (shard.ByObject).
	By shard.By
	// Timeout bounds each wait: for the replicas to partition the Pods, to
	// take a killed replica's Pods, to let a new one take its share (2 min).
	Timeout time.Duration
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

func (c *ShardConfig) defaults() {
	if c.InitialPods == 0 {
		c.InitialPods = 2000
	}
	if c.By == "" {
		c.By = shard.ByObject
	}
	if c.Timeout == 0 {
		c.Timeout = 2 * time.Minute
	}
	if c.Log == nil {
		c.Log = func(string, ...any) {}
	}
}

// ShardResult is what one RunShards program did and found.
type ShardResult struct {
	Seed uint64
	// Writes counts the writes made while the replicas rebalanced.
	Writes int
	// Pods is the number of Pods of the truth at the end.
	Pods int
	// Held is what each live replica held at the end, by name.
	Held map[string]int
	// RebalanceDips counts, by live replica, the times its
	// LastSyncResourceVersion went back during a rebalance, as it does while
	// the objects that came to the replica are handed over with their own,
	// older resourceVersions; a dip at any other time is a failure.
	RebalanceDips map[string]int
	// KillSeconds is how long the survivors took to rebalance after the
	// SIGKILL, JoinSeconds how long the replicas took after the new one
	// started.
	KillSeconds, JoinSeconds float64
	// Failures are the broken checks; empty means the run passed.
	Failures []string
	Duration time.Duration
}

// Failed reports whether any check failed.
func (r ShardResult) Failed() bool { return len(r.Failures) > 0 }

// shardLeaseTimings are the Lease membership's timings in a run: short, so
// that a killed replica's Pods move within seconds.
const (
	shardLeaseDuration = 10 * time.Second
	shardRenewDeadline = 7 * time.Second
	shardRetryPeriod   = time.Second
)

// RunShards runs the sharding program of seed: three replica processes (each
// a sharded leanstore Pod informer of another flavor, members of one Lease
// group) split the run's Pods, the third joining the first two; while the writer creates, updates, patches and
// deletes Pods, moves them out of and into the selector and drains
// namespaces, one replica is killed with SIGKILL (its Lease left to expire)
// and, once the survivors have taken its Pods, a fourth replica starts and
// takes its share. After the writes, it checks the union of the live
// replicas against a fresh consistent LIST:
//
//   - every Pod is held by exactly one live replica, at the LIST's
//     resourceVersion, and no replica holds a Pod the LIST does not have;
//   - what each replica's handlers were told (adds, updates and deletes
//     applied in order) equals its store;
//   - no replica's handlers saw a resourceVersion older than one they had
//     seen for the same key, and no replica's LastSyncResourceVersion went
//     backwards;
//   - each replica listed once to start and once per rebalance, no more: a
//     full list would repair, unseen, a store a rebalance left wrong;
//   - across a move, the new owner is not older than the old one: each Pod a
//     survivor took from the killed replica was told to it at a
//     resourceVersion no older than the last the killed replica was told, and
//     each Pod the new replica took at one no older than the last its old
//     owner was told before the new replica started.
//
// Each replica runs in its own process, started from the current executable
// (see ShardReplicaEnv). An error means the run could not be carried out;
// broken checks are in the result.
func RunShards(ctx context.Context, cfg ShardConfig, seed uint64) (ShardResult, error) {
	cfg.defaults()
	start := time.Now()
	res := ShardResult{Seed: seed, Held: map[string]int{}, RebalanceDips: map[string]int{}}
	h, w, err := prepareShards(ctx, cfg, seed)
	if err != nil {
		return res, err
	}
	defer h.stopAll()
	if res.Failures, err = h.startThree(ctx, seed); err != nil || len(res.Failures) > 0 {
		return res, err
	}

	// The writes go on through the kill and the join.
	bg := startWrites(ctx, w)
	defer func() { _, _ = bg.stop() }() // on an early return; a second call returns at once
	sleepCtx(ctx, 2*time.Second)

	killed := time.Now()
	victim := h.kill("c")
	if err := h.settled(ctx, 2); err != nil {
		res.Failures = append(res.Failures, fmt.Sprintf("after killing c: %v", err))
		return res, nil
	}
	res.KillSeconds = time.Since(killed).Seconds()
	cfg.Log("seed %d: a and b took c's Pods in %.1fs, during %d writes", seed, res.KillSeconds, bg.written.Load())

	sleepCtx(ctx, time.Second)
	joined := time.Now()
	before := h.lastSeen()
	if err := h.start(ctx, "d", Flavor{Library: "leanstore", Kind: "typed", Streaming: "off", SlowIndex: true}); err != nil {
		return res, err
	}
	if err := h.settled(ctx, 3); err != nil {
		res.Failures = append(res.Failures, fmt.Sprintf("after starting d: %v", err))
		return res, nil
	}
	res.JoinSeconds = time.Since(joined).Seconds()
	cfg.Log("seed %d: d took its share in %.1fs, %d writes so far", seed, res.JoinSeconds, bg.written.Load())
	sleepCtx(ctx, time.Second)
	if res.Writes, err = bg.stop(); err != nil {
		return res, err
	}
	if err := w.releaseAll(ctx); err != nil {
		return res, err
	}

	truth, fails := h.converge(ctx, "after the writes")
	res.Failures = append(res.Failures, fails...)
	res.Pods = len(truth)
	for _, r := range h.live() {
		res.Held[r.id] = len(r.store)
		res.RebalanceDips[r.id] = r.rebalanceDips
	}
	res.Failures = append(res.Failures, h.violations()...)
	res.Failures = append(res.Failures, extraLists(h.live())...)
	res.Failures = append(res.Failures, movedNotOlder(victim, killed, h.live(), nil)...)
	d := h.replica("d")
	res.Failures = append(res.Failures, movedNotOlder(nil, joined, []*replicaProc{d}, before)...)
	res.Duration = time.Since(start)
	return res, nil
}

// prepareShards creates the run's namespaces, seeds its Pods and returns the
// run, with no replica started yet, and its writer.
func prepareShards(ctx context.Context, cfg ShardConfig, seed uint64) (*shardRun, *writer, error) {
	start := time.Now()
	admin, err := kubernetes.NewForConfig(cfg.Server)
	if err != nil {
		return nil, nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	run := fmt.Sprintf("sh%d-%d-%d", seed, time.Now().UnixNano()%100000, runSeq.Add(1))
	w := newWriter(admin, run, seed)
	if err := w.createNamespace(ctx); err != nil {
		return nil, nil, err
	}
	if err := w.seed(ctx, cfg.InitialPods); err != nil {
		return nil, nil, err
	}
	leaseNS := "cf-" + run + "-leases"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNS}}, metav1.CreateOptions{}); err != nil {
		return nil, nil, fmt.Errorf("create namespace %s: %w", leaseNS, err)
	}
	cfg.Log("seed %d: %d Pods created in %s", seed, cfg.InitialPods, time.Since(start).Round(time.Second))
	return &shardRun{cfg: cfg, admin: admin, exe: exe, selector: runLabel + "=" + run, leaseNS: leaseNS, group: run}, w, nil
}

// startThree starts replicas a and b, then c once they have split the Pods,
// and returns what is wrong when they do not converge, or why one could not
// start. Each replica is
// another flavor: the three factories, streaming lists on and off (d, later,
// has a slow consumer). c joining a and b means that the Pods c takes from
// them go back to them when c is killed: each was told DELETED when c took
// it and ADDED when it came back.
func (h *shardRun) startThree(ctx context.Context, seed uint64) ([]string, error) {
	if err := h.start(ctx, "a", Flavor{Library: "leanstore", Kind: "typed", Streaming: "auto"}); err != nil {
		return nil, err
	}
	if err := h.start(ctx, "b", Flavor{Library: "leanstore", Kind: "metadata", Streaming: "off"}); err != nil {
		return nil, err
	}
	if _, fails := h.converge(ctx, "with a and b"); len(fails) > 0 {
		return fails, nil
	}
	if err := h.start(ctx, "c", Flavor{Library: "leanstore", Kind: "dynamic", Streaming: "auto"}); err != nil {
		return nil, err
	}
	if _, fails := h.converge(ctx, "after c joined"); len(fails) > 0 {
		return fails, nil
	}
	h.cfg.Log("seed %d: a, b, c partition the Pods", seed)
	return nil, nil
}

// backgroundWrites runs a writer until stopped.
type backgroundWrites struct {
	cancel  context.CancelFunc
	done    sync.WaitGroup
	written atomic.Int64
	err     error
}

func startWrites(ctx context.Context, w *writer) *backgroundWrites {
	ctx, cancel := context.WithCancel(ctx)
	bg := &backgroundWrites{cancel: cancel}
	bg.done.Go(func() {
		for ctx.Err() == nil {
			if err := w.write(ctx); err != nil {
				if ctx.Err() == nil {
					bg.err = err
				}
				return
			}
			bg.written.Add(1)
		}
	})
	return bg
}

// stop ends the writes and returns how many were made and the error that
// ended them early, if any.
func (bg *backgroundWrites) stop() (int, error) {
	bg.cancel()
	bg.done.Wait()
	return int(bg.written.Load()), bg.err
}

// seed creates n Pods in the run's first namespace, several at a time.
func (w *writer) seed(ctx context.Context, n int) error {
	ns := w.namespaces[0]
	pods := make([]*corev1.Pod, n)
	held := make([]bool, n)
	for i := range pods {
		pods[i], held[i] = w.newPod(ns)
	}
	work := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				if _, err := w.cs.CoreV1().Pods(ns).Create(ctx, pods[i], metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create pod %s/%s: %w", ns, pods[i].Name, err)
				}
			}
		})
	}
	for i := range pods {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	for i, p := range pods {
		w.created(p, held[i])
	}
	return nil
}

// shardRun is the replica processes of one RunShards program.
type shardRun struct {
	cfg      ShardConfig
	admin    kubernetes.Interface
	exe      string
	selector string
	leaseNS  string
	group    string

	reps []*replicaProc
}

// replicaProc is one replica process, and what the test learned of it.
type replicaProc struct {
	id     string
	flavor Flavor
	cmd    *exec.Cmd
	in     io.WriteCloser
	// states receives the replica's answers to commands; it is closed when
	// the replica's stdout ends.
	states chan *replicaState
	// read ends when the replica's stdout does.
	read   sync.WaitGroup
	stderr *tailBuffer
	dead   bool

	// rec is what its handlers were told, applied in order, checked per key.
	rec *recorder
	// mu guards adds.
	mu sync.Mutex
	// adds are the add events it was told, with when the test read them.
	adds []toldAdd
	// store and lastSync are from its last "state".
	store         state
	lastSync      []string
	rebalanceDips int
	// lists and rebalances are its informer's counts, from its last "state".
	lists      int
	rebalances int64
}

type toldAdd struct {
	at      time.Time
	key, rv string
}

func (h *shardRun) start(ctx context.Context, id string, f Flavor) error {
	spec, err := json.Marshal(replicaSpec{Kubeconfig: h.cfg.Kubeconfig, Identity: id, LeaseNamespace: h.leaseNS, Group: h.group,
		Selector: h.selector, Flavor: f, By: h.cfg.By,
		LeaseDuration: shardLeaseDuration, RenewDeadline: shardRenewDeadline, RetryPeriod: shardRetryPeriod})
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, h.exe)
	cmd.Env = append(os.Environ(), ShardReplicaEnv+"="+string(spec))
	// The replica dies with the test, whatever happens to the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	r := &replicaProc{id: id, flavor: f, cmd: cmd, states: make(chan *replicaState, 1), stderr: &tailBuffer{max: 16 << 10}, rec: newRecorder()}
	cmd.Stderr = r.stderr
	if r.in, err = cmd.StdinPipe(); err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start replica %s: %w", id, err)
	}
	r.read.Add(1)
	go r.readLines(out)
	h.reps = append(h.reps, r)
	return nil
}

// readLines applies the replica's event lines to its recorder and hands its
// answers to states, until its stdout ends.
func (r *replicaProc) readLines(out io.Reader) {
	defer r.read.Done()
	defer close(r.states)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var l replicaLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			r.rec.mu.Lock()
			r.rec.violations = append(r.rec.violations, fmt.Sprintf("wrote %q: %v", sc.Text()[:min(len(sc.Text()), 200)], err))
			r.rec.mu.Unlock()
			continue
		}
		if l.State != nil {
			r.states <- l.State
			continue
		}
		r.rec.sawKey(l.Event, l.Key, l.RV, l.Event == "delete")
		if l.Event == "add" {
			r.mu.Lock()
			r.adds = append(r.adds, toldAdd{at: time.Now(), key: l.Key, rv: l.RV})
			r.mu.Unlock()
		}
	}
}

// ask sends a command and waits for the replica's answer.
func (r *replicaProc) ask(ctx context.Context, cmd string) (*replicaState, error) {
	if _, err := fmt.Fprintln(r.in, cmd); err != nil {
		return nil, fmt.Errorf("replica %s: %w (stderr: %s)", r.id, err, r.stderr)
	}
	select {
	case st, ok := <-r.states:
		if !ok {
			return nil, fmt.Errorf("replica %s ended (stderr: %s)", r.id, r.stderr)
		}
		return st, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// kill ends the replica with SIGKILL, as a crash or an OOM kill does: its
// Lease stays until it expires.
func (h *shardRun) kill(id string) *replicaProc {
	r := h.replica(id)
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	// Every line it wrote before it died is read before Wait closes its
	// stdout.
	r.read.Wait()
	_ = r.cmd.Wait()
	r.dead = true
	return r
}

// stopAll ends the live replicas cleanly (stdin closed: each stops and
// releases its Lease) and waits for them.
func (h *shardRun) stopAll() {
	for _, r := range h.live() {
		_ = r.in.Close()
	}
	for _, r := range h.live() {
		r.read.Wait()
		_ = r.cmd.Wait()
		r.dead = true
	}
}

func (h *shardRun) replica(id string) *replicaProc {
	for _, r := range h.reps {
		if r.id == id {
			return r
		}
	}
	return nil
}

func (h *shardRun) live() []*replicaProc {
	var out []*replicaProc
	for _, r := range h.reps {
		if !r.dead {
			out = append(out, r)
		}
	}
	return out
}

// settled waits until every live replica has synced, has a ring of members
// members and is not rebalancing.
func (h *shardRun) settled(ctx context.Context, members int) error {
	deadline := time.Now().Add(h.cfg.Timeout)
	for {
		why, err := h.unsettled(ctx, members)
		if err != nil {
			return err
		}
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not settled within %s: %s", h.cfg.Timeout, why)
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

func (h *shardRun) unsettled(ctx context.Context, members int) (string, error) {
	for _, r := range h.live() {
		st, err := r.ask(ctx, "status")
		if err != nil {
			return "", err
		}
		if !st.Synced || st.Rebalancing || len(st.Members) != members || st.Error != "" {
			return fmt.Sprintf("%s: synced %v, rebalancing %v, members %v, error %q", r.id, st.Synced, st.Rebalancing, st.Members, st.Error), nil
		}
	}
	return "", nil
}

// converge waits until the live replicas, settled, partition a fresh
// consistent LIST (read again at every try) and each one's handlers were
// told what its store holds; it returns the last truth and, if they did not
// within the timeout, what was still wrong.
func (h *shardRun) converge(ctx context.Context, step string) (state, []string) {
	members := len(h.live())
	deadline := time.Now().Add(h.cfg.Timeout)
	var problems []string
	var truth state
	for {
		var err error
		if truth, err = truthOf(ctx, h.admin, h.selector); err != nil {
			return nil, []string{fmt.Sprintf("%s: the truth: %v", step, err)}
		}
		problems = nil
		why, err := h.unsettled(ctx, members)
		switch {
		case err != nil:
			return truth, []string{fmt.Sprintf("%s: %v", step, err)}
		case why != "":
			problems = append(problems, why)
		default:
			for _, r := range h.live() {
				st, err := r.ask(ctx, "state")
				if err != nil {
					return truth, []string{fmt.Sprintf("%s: %v", step, err)}
				}
				r.store, r.lastSync, r.rebalanceDips = st.Store, st.LastSync, st.RebalanceDips
				r.lists, r.rebalances = st.Lists, st.Rebalances
			}
			problems = unionProblems(truth, h.live())
		}
		if len(problems) == 0 {
			return truth, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
	out := make([]string, 0, min(len(problems), 10)+1)
	out = append(out, fmt.Sprintf("%s: the replicas did not partition a fresh LIST within %s (%d problems)", step, h.cfg.Timeout, len(problems)))
	for _, p := range problems[:min(len(problems), 10)] {
		out = append(out, step+": "+p)
	}
	return truth, out
}

// extraLists checks that each live replica listed once to start and once
// per rebalance (the list inside the watch that hands it the difference),
// and no more. The program injects no fault, so another list could only
// have repaired a store that an event or a rebalance's difference left
// wrong: a full list replaces the store, and the union check would see
// nothing of the defect (a moved object that was not deleted, say).
func extraLists(reps []*replicaProc) []string {
	var out []string
	for _, r := range reps {
		if want := 1 + int(r.rebalances); r.lists > want {
			out = append(out, fmt.Sprintf("%s listed %d times for %d rebalances, want at most %d: a list that only a store left wrong would need", r.id, r.lists, r.rebalances, want))
		}
	}
	return out
}

// unionProblems compares the union of the replicas' last stores with the
// truth, and each replica's store with what its handlers were told.
func unionProblems(truth state, reps []*replicaProc) []string {
	var problems []string
	holders := map[string][]string{}
	for _, r := range reps {
		for k, rv := range r.store {
			holders[k] = append(holders[k], r.id)
			if want, ok := truth[k]; !ok {
				problems = append(problems, fmt.Sprintf("%s holds %s, which a fresh LIST does not have", r.id, k))
			} else if rv != want {
				problems = append(problems, fmt.Sprintf("%s holds %s at %s, a fresh LIST at %s", r.id, k, rv, want))
			}
		}
		told, _ := r.rec.snapshot()
		if d := r.store.diff(told); d != "" {
			problems = append(problems, fmt.Sprintf("what %s's handlers were told differs from its store: %s", r.id, d))
		}
	}
	for k := range truth {
		switch h := holders[k]; len(h) {
		case 1:
		case 0:
			problems = append(problems, fmt.Sprintf("%s is held by no replica", k))
		default:
			problems = append(problems, fmt.Sprintf("%s is held by %d replicas: %v", k, len(h), h))
		}
	}
	slices.Sort(problems)
	return problems
}

// lastSeen is, for every live replica, the newest resourceVersion its
// handlers were told of each key so far.
func (h *shardRun) lastSeen() map[string]state {
	out := map[string]state{}
	for _, r := range h.live() {
		r.rec.mu.Lock()
		out[r.id] = maps.Clone(r.rec.last)
		r.rec.mu.Unlock()
	}
	return out
}

// movedNotOlder checks the moves of one rebalance: every add that a replica
// of to was told of a key after since must be at a resourceVersion no older
// than what the old owner was told of it before since — the killed replica
// from (its whole life), or, with from nil, the replicas of before (their
// last-seen resourceVersions at since).
func movedNotOlder(from *replicaProc, since time.Time, to []*replicaProc, before map[string]state) []string {
	old := map[string]string{} // key -> newest resourceVersion an old owner was told
	note := func(s state) {
		for k, rv := range s {
			if prev, ok := old[k]; !ok || newer(rv, prev) {
				old[k] = rv
			}
		}
	}
	if from != nil {
		from.rec.mu.Lock()
		note(from.rec.last)
		from.rec.mu.Unlock()
	}
	for _, s := range before {
		note(s)
	}
	var out []string
	for _, r := range to {
		if r == nil {
			continue
		}
		r.mu.Lock()
		for _, a := range r.adds {
			if a.at.Before(since) {
				continue
			}
			if prev, ok := old[a.key]; ok && newer(prev, a.rv) {
				out = append(out, fmt.Sprintf("%s took %s at resourceVersion %s, older than the %s its old owner had been told", r.id, a.key, a.rv, prev))
			}
		}
		r.mu.Unlock()
	}
	return first10(out)
}

// newer reports whether resourceVersion a is newer than b.
func newer(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c > 0
}

func first10(s []string) []string {
	if len(s) > 10 {
		return append(s[:10:10], fmt.Sprintf("and %d more", len(s)-10))
	}
	return s
}

// violations are what each replica's handlers and LastSyncResourceVersion
// did wrong, the killed replica's included.
func (h *shardRun) violations() []string {
	var out []string
	for _, r := range h.reps {
		_, vs := r.rec.snapshot()
		for _, v := range first10(vs) {
			out = append(out, fmt.Sprintf("replica %s (%s): handler: %s", r.id, r.flavor, v))
		}
		for _, v := range r.lastSync {
			out = append(out, fmt.Sprintf("replica %s (%s): %s", r.id, r.flavor, v))
		}
	}
	return out
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = slices.Delete(t.b, 0, over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.b) == 0 {
		return "empty"
	}
	return string(t.b)
}
