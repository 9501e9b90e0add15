package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/internal/cluster"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// target is the cluster being measured and how to undo what the run did to it.
type target struct {
	config *rest.Config
	name   string
	// serverPID is the server's process when it runs on this machine (the
	// local server, or --server-pid), 0 otherwise.
	serverPID int
	cleanup   []func()
}

// local reports whether the server's process can be read.
func (t target) local() bool { return t.serverPID != 0 }

// RunOptions are one `cachebench run`: what to measure, on which cluster, and
// where the children's logs and profiles go. cmd/cachebench fills them from
// its flags and checks them; Run takes them as they are.
type RunOptions struct {
	// Spec is the dataset to seed (on the local server, or with Seed); on a
	// cluster that is only read, its Namespace is what is cached ("" is all
	// namespaces) and the rest is unused.
	Spec dataset.Spec
	// Resources are the resources cached, each by every mode of Modes that can
	// cache it, or all together by each mode with Together.
	Resources []schema.GroupVersionResource
	Modes     []Mode
	Plan      Plan
	Together  bool
	// Sizes, when set, are the Pod counts of a scale run, ascending: the
	// dataset grows from one to the next, the other kinds in proportion.
	Sizes []int
	// CPUProfiles, when set, is a directory for a CPU profile of each mode's
	// initial sync.
	CPUProfiles string
	// AllocProfiles, when set, is a directory for an allocation profile of
	// each mode's initial sync.
	AllocProfiles string
	// GOGC and GOMEMLIMIT are set in the children's environment when not "".
	GOGC, GOMEMLIMIT string
	// OutDir receives the children's logs (OutDir/logs).
	OutDir string
	// Cluster is the cluster to measure, as loaded from a kubeconfig and
	// kubectl's flags; nil starts the local server. Whatever its user
	// authenticates with (a client certificate, a token, an exec plugin), the
	// fault proxy in front of it authenticates as that user.
	Cluster *cluster.Target
	// Seed, with Cluster, seeds a namespace of the run's own (Spec) and
	// deletes it afterwards; the local server is always seeded.
	Seed bool
	// ServerPID, with Cluster, is the API server's process on this
	// machine, read for its CPU, RSS and storage metrics.
	ServerPID int
	// KeepServer keeps the local server running after the run (and after
	// Write) until ctx ends.
	KeepServer bool
	// ServerArgs are extra kube-apiserver flags for the local server.
	ServerArgs []string
	// ServerGOGC, when not "", is the local server's GOGC. It is set in the
	// server's environment only: a GOGC in this process's environment would
	// reach the children too, and a leanstore child that finds GOGC set leaves
	// the collector to it and runs without its heap bound.
	ServerGOGC string
	// ControllerRuntimeChild is a prebuilt child program of the
	// controller-runtime modes; "" builds it from the checkout.
	ControllerRuntimeChild string
	// Write, when set, receives the finished report while the cluster is
	// still up: the caller renders and saves it (table, JSON, HTML), so that
	// the measurement does not depend on how its results are drawn.
	Write func(Report) error
}

// runner is one Run in progress.
type runner struct {
	RunOptions
	// programs are the child programs of modes not measured by `cachebench
	// child`, by program name (childPrograms).
	programs map[string]string
	// seeded is how long seeding (or growing) the dataset took.
	seeded time.Duration
}

// Job is one child process of a run: a mode and the resources it caches.
type Job struct {
	Mode      Mode
	Resources []ResourceRef
}

// Run measures o.Modes on the cluster, mode by mode, each in a child process
// of its own (the test binary or cachebench re-executed as `cachebench
// child`), and hands the report to o.Write. Progress goes to stderr. A mode
// that fails is recorded in the report and the others still run; Run then
// returns an error that counts them.
func Run(ctx context.Context, o RunOptions, stderr io.Writer) error {
	r := &runner{RunOptions: o}
	return r.run(ctx, stderr)
}

func (o *runner) run(ctx context.Context, stderr io.Writer) (err error) {
	started := time.Now()
	if err := os.MkdirAll(filepath.Join(o.OutDir, "logs"), 0o755); err != nil {
		return err
	}
	for _, dir := range []string{o.CPUProfiles, o.AllocProfiles} {
		if dir == "" {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	// Before anything is seeded: a program that does not build fails the run
	// at once.
	if o.programs, err = o.childPrograms(ctx, stderr); err != nil {
		return err
	}
	t, err := o.prepare(ctx, stderr)
	defer func() {
		for i := len(t.cleanup) - 1; i >= 0; i-- {
			t.cleanup[i]()
		}
	}()
	if err != nil {
		return err
	}

	rep := Report{
		Schema:      ReportSchema,
		Started:     started,
		Environment: o.environment(t),
		Plan:        o.Plan,
	}
	proxy, err := startProxy(t.config)
	if err != nil {
		return err
	}
	defer proxy.close()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	s := &sizeSweep{target: t, exe: exe, config: proxy.config, srv: proxy, jobs: o.Jobs(), rep: &rep}
	if err := o.measureSizes(ctx, s, stderr); err != nil {
		return err
	}
	rep.Finished = time.Now()

	if o.Write != nil {
		if err := o.Write(rep); err != nil {
			return err
		}
	}
	if o.KeepServer && o.Cluster == nil {
		fmt.Fprintln(stderr, "kube-apiserver kept running; press Ctrl-C to stop it")
		<-ctx.Done()
	}
	if s.failed > 0 {
		return fmt.Errorf("%d of %d modes failed (details in the table and in %s)", s.failed, s.total, filepath.Join(o.OutDir, "logs"))
	}
	return nil
}

// sizeSweep is what the jobs of a run share, at every dataset size.
type sizeSweep struct {
	target target
	// exe is the program of `cachebench child`: this one.
	exe string
	// config reaches the server through the fault proxy, srv.
	config *rest.Config
	srv    Server
	jobs   []Job
	// sized is set in a scale run (more than one size).
	sized bool
	rep   *Report
	// failed of total jobs run failed.
	failed, total int
}

// measureSizes runs every job at each dataset size, growing the dataset from
// one size to the next, and stops before a size the server would not fit in.
func (o *runner) measureSizes(ctx context.Context, s *sizeSweep, stderr io.Writer) error {
	sizes := o.Sizes
	if len(sizes) == 0 {
		sizes = []int{o.Spec.Pods}
	}
	s.sized = len(sizes) > 1
	have := dataset.Spec{}
	var last []Result // the results at the previous size
	for si, size := range sizes {
		var fit room
		if si > 0 {
			var ok bool
			if fit, ok = o.roomFor(s, last, have.Pods, size, stderr); !ok {
				break
			}
			if err := o.grow(ctx, s.target.config, have, size, stderr); err != nil {
				return err
			}
		}
		have = o.Spec
		s.rep.Datasets = append(s.rep.Datasets, o.datasets(ctx, s.target, stderr)...)
		var err error
		if last, err = o.measureSize(ctx, s, size, fit, stderr); err != nil {
			return err
		}
	}
	return nil
}

// roomFor projects what the next size needs from the results at the previous
// one; it reports false, and notes why in the report, when the server would
// not fit.
func (o *runner) roomFor(s *sizeSweep, last []Result, prev, size int, stderr io.Writer) (room, bool) {
	var serverRSS uint64
	if s.target.local() {
		serverRSS = ProcessRSS(s.target.serverPID)
	}
	fit := projectRoom(last, prev, size, memAvailable(), serverRSS)
	if ok, why := fit.serverFits(); !ok && fit.available > 0 {
		note := fmt.Sprintf("stopped before %d pods: %s", size, why)
		_, _ = fmt.Fprintln(stderr, note)
		s.rep.Skipped = append(s.rep.Skipped, note)
		return fit, false
	}
	return fit, true
}

// measureSize runs every job that fits at one dataset size, restoring the
// dataset after each job that changed it, and returns their results.
func (o *runner) measureSize(ctx context.Context, s *sizeSweep, size int, fit room, stderr io.Writer) ([]Result, error) {
	churn, err := o.churner(s.target)
	if err != nil {
		return nil, err
	}
	var results []Result
	rounds := max(o.Plan.Rounds, 1)
	for _, turn := range turns(len(s.jobs), rounds) {
		round, k := roundOf(turn.round, rounds), turn.job
		j := s.jobs[k]
		pos := fmt.Sprintf("%d/%d", k+1, len(s.jobs))
		if rounds > 1 {
			pos = fmt.Sprintf("%s, round %d of %d", pos, turn.round, rounds)
		}
		if s.sized {
			pos = fmt.Sprintf("%s at %d pods", pos, size)
		}
		if ok, why := fit.modeFits(j.Mode.Name); !ok && fit.available > 0 {
			note := fmt.Sprintf("%s left out at %d pods: %s", j.Mode.Name, size, why)
			fmt.Fprintf(stderr, "mode %s: %s\n", pos, note)
			s.rep.Skipped = append(s.rep.Skipped, note)
			continue
		}
		writer, err := o.eventWriter(s.target, j)
		if err != nil {
			return results, err
		}
		res, err := o.runMode(ctx, s.exe, j, s.config, s.srv, s.target, churn, writer, pos, round, stderr)
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
		if writer != nil {
			if err := writer.Cleanup(ctx); err != nil {
				return results, fmt.Errorf("delete the events phase's pods after mode %s: %w", j.Mode.Name, err)
			}
		}
		s.total++
		if err != nil {
			s.failed++
			res.Error = err.Error()
		}
		res.Round = round
		s.rep.Results = append(s.rep.Results, res)
		results = append(results, res)
		if churn != nil {
			if err := churn.Restore(ctx); err != nil {
				return results, fmt.Errorf("restore the dataset after mode %s: %w", j.Mode.Name, err)
			}
		}
	}
	return results, nil
}

// Jobs lists the child processes of one dataset size: a mode per resource, or
// a mode for all resources together.
func (o *RunOptions) Jobs() []Job {
	refs := o.refs()
	var jobs []Job
	if o.Together {
		for _, m := range o.Modes {
			jobs = append(jobs, Job{m, refs})
		}
		return jobs
	}
	for _, r := range refs {
		for _, m := range ModesFor(o.Modes, r.GroupVersionResource) {
			jobs = append(jobs, Job{m, []ResourceRef{r}})
		}
	}
	return jobs
}

// eventWriter returns the writer of the events phase of job j, or nil when
// the plan has no events phase or j caches no Pods (which the writer
// changes).
func (o *runner) eventWriter(t target, j Job) (*dataset.EventWriter, error) {
	if o.Plan.Events == nil || !cachesPods(j) {
		return nil, nil
	}
	return dataset.NewEventWriter(t.config, o.Spec)
}

func cachesPods(j Job) bool {
	return slices.ContainsFunc(j.Resources, func(r ResourceRef) bool { return r.GroupVersionResource == dataset.PodsGVR })
}

// churner returns what writes the changes before each re-list, or nil when the
// plan changes nothing.
func (o *runner) churner(t target) (*dataset.Churner, error) {
	if !slices.ContainsFunc(o.Plan.Churn, func(c float64) bool { return c > 0 }) {
		return nil, nil
	}
	return dataset.NewChurner(t.config, o.Spec, o.Plan.ChurnSeed)
}

// runMode measures one mode in a child and prints its progress on one line.
// round is the round (Result.Round), 0 in a run of one.
func (o *runner) runMode(ctx context.Context, exe string, j Job, cfg *rest.Config, srv Server, t target, churn *dataset.Churner, writer *dataset.EventWriter, pos string, round int, stderr io.Writer) (Result, error) {
	m := j.Mode
	names := make([]string, len(j.Resources))
	for i, r := range j.Resources {
		names[i] = r.Resource
	}
	what := strings.Join(names, "+")
	base := fileName(m.Name, what, o.Spec.Pods, len(o.Sizes) > 1, round)
	logPath := filepath.Join(o.OutDir, "logs", base+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return Result{Mode: m.Name, Title: m.Title, Resource: strings.Join(names, ","), Streaming: m.Streaming}, err
	}
	defer logFile.Close()
	if m.Program != nil {
		exe = o.programs[m.Program.Name]
	}
	cmd := exec.Command(exe, "child")
	cmd.Stderr = logFile
	env := o.childEnv()
	fmt.Fprintf(stderr, "mode %s: %s (%s", pos, m.Name, m.Title)
	if len(o.Resources) > 1 {
		fmt.Fprintf(stderr, ", %s", what)
	}
	fmt.Fprint(stderr, "): ")
	plan := o.Plan
	if writer == nil {
		plan.Events = nil // a job without Pods: nothing the writer changes
	}
	spec := ChildSpec{
		Command: cmd, Mode: m, Resources: j.Resources, Config: cfg, Plan: plan, Env: env,
		Events: func(e Event) { fmt.Fprint(stderr, progressText(e, o.Plan.Relists)) },
	}
	if writer != nil {
		spec.Write = writeEvents(writer, plan.Events)
	}
	if churn != nil {
		spec.Churn = func(ctx context.Context, fraction float64) (dataset.Changes, error) {
			var total dataset.Changes
			for _, r := range j.Resources {
				c, err := churn.Step(ctx, r.GroupVersionResource, fraction)
				total = total.Add(c)
				if err != nil {
					return total, err
				}
			}
			return total, nil
		}
	}
	if t.local() {
		spec.ServerPID = t.serverPID
		spec.ServerMetrics = storageReader(t.config, j.Resources)
	}
	if o.CPUProfiles != "" {
		spec.CPUProfile = filepath.Join(o.CPUProfiles, base+".sync.pprof")
	}
	if o.AllocProfiles != "" {
		spec.AllocProfile = filepath.Join(o.AllocProfiles, base+".sync.allocs.pprof")
	}
	res, err := RunChild(ctx, spec, srv)
	if err != nil {
		fmt.Fprintf(stderr, "FAILED: %v (log: %s)\n", err, logPath)
		return res, err
	}
	fmt.Fprintf(stderr, "server saw %s\n", serverPath(res.ListPath.Server))
	return res, nil
}

// childEnv is what a child's environment adds to this process's: --gogc and
// --gomemlimit, never the server's GOGC.
func (o *RunOptions) childEnv() []string {
	var env []string
	if o.GOGC != "" {
		env = append(env, "GOGC="+o.GOGC)
	}
	if o.GOMEMLIMIT != "" {
		env = append(env, "GOMEMLIMIT="+o.GOMEMLIMIT)
	}
	return env
}

// serverOptions are the local server's.
func (o *RunOptions) serverOptions(progress io.Writer) apiserver.Options {
	return apiserver.Options{ExtraArgs: o.ServerArgs, GOGC: o.ServerGOGC, Progress: progress}
}

// writeEvents is the parent's side of the events phase with writer: the
// setup of its Pods for step 0, the plan's rate k for step k.
func writeEvents(writer *dataset.EventWriter, plan *EventsPlan) func(context.Context, int) (EventsAnswer, error) {
	return func(ctx context.Context, step int) (EventsAnswer, error) {
		if step == 0 {
			if err := writer.Setup(ctx, plan.Objects); err != nil {
				return EventsAnswer{}, err
			}
			return EventsAnswer{Objects: plan.Objects}, nil
		}
		if step > len(plan.Rates) {
			return EventsAnswer{}, fmt.Errorf("events step %d of a plan of %d", step, len(plan.Rates))
		}
		st, err := writer.Run(ctx, plan.Rates[step-1], plan.Step.D())
		return EventsAnswer{Step: st}, err
	}
}

// fileName names a mode's log and profile files.
func fileName(mode, resources string, pods int, sized bool, round int) string {
	name := strings.ReplaceAll(mode, "/", "_") + "." + resources
	if sized {
		name += fmt.Sprintf(".%d", pods)
	}
	if round > 0 {
		name += fmt.Sprintf(".round%d", round)
	}
	return name
}

// turn is one job's run in one round (from 1).
type turn struct{ round, job int }

// turns is the order in which rounds of jobs run: every job once per round,
// the jobs in order in odd rounds and in reverse in even ones, so that each
// job's rounds are spread over the run and no job always follows the same one.
func turns(jobs, rounds int) []turn {
	var out []turn
	for round := 1; round <= rounds; round++ {
		for i := range jobs {
			k := i
			if round%2 == 0 {
				k = jobs - 1 - i
			}
			out = append(out, turn{round, k})
		}
	}
	return out
}

// roundOf is Result.Round of round (from 1) in a run of rounds: 0 when
// there is one.
func roundOf(round, rounds int) int {
	if rounds > 1 {
		return round
	}
	return 0
}

func progressText(e Event, relists int) string {
	switch e.Kind {
	case "syncing":
		return "syncing... "
	case "synced":
		return fmt.Sprintf("%d objects in %.1fs; ", e.Objects, e.Seconds)
	case "listed":
		if e.Error != "" {
			return fmt.Sprintf("reconcile list failed (%s); ", e.Error)
		}
		perObject := 0.0
		if e.Objects > 0 {
			perObject = float64(e.AllocatedBytes) / float64(e.Objects) / 1000
		}
		return fmt.Sprintf("reconcile list %.1f KB/obj allocated, peak %.2fx live; ", perObject, e.PeakRatio)
	case "relist":
		return fmt.Sprintf("re-list %d/%d ", e.Index, relists)
	case "events":
		return fmt.Sprintf("events on %d pods of the writer: ", e.Objects)
	case "eventstep":
		st := e.Step
		if st == nil {
			return ""
		}
		s := fmt.Sprintf("%s/s asked, %.0f/s written, p99 %.1f ms", trimRate(st.Rate), st.AchievedRate, st.Latency.P99)
		if st.Error != "" {
			s += " (" + st.Error + ")"
		}
		return s + "; "
	case "relisted":
		if e.Error != "" {
			return fmt.Sprintf("failed (%s); ", e.Error)
		}
		s := fmt.Sprintf("%.1fs, peak %.2fx live", e.Seconds, e.PeakRatio)
		if e.Changes != nil && e.Changes.Total() > 0 && e.Delivered != nil {
			s += fmt.Sprintf(", %d changes, %d events", e.Changes.Total(), e.Delivered.Adds+e.Delivered.Updates+e.Delivered.Deletes)
		}
		return s + "; "
	}
	return ""
}

func serverPath(q Requests) string {
	return fmt.Sprintf("%d LIST, %d streaming list, %d watch requests", q.List, q.WatchList, q.Watch)
}

// prepare starts the local server or connects to the cluster, checks access
// and seeds the dataset.
func (o *runner) prepare(ctx context.Context, stderr io.Writer) (target, error) {
	var t target
	if o.Cluster == nil {
		if o.Spec.Namespace == "" {
			o.Spec.Namespace = cluster.DefaultNamespace
		}
		srv, err := apiserver.Start(ctx, o.serverOptions(stderr))
		if err != nil {
			return t, err
		}
		t.config, t.name, t.serverPID = srv.Config, "local kube-apiserver", srv.PID
		if o.KeepServer {
			fmt.Fprintf(stderr, "kube-apiserver kept for after the run: export KUBECONFIG=%s\n", srv.Kubeconfig)
		}
		t.cleanup = append(t.cleanup, func() { _ = srv.Stop() })
		return t, o.seedDataset(ctx, t.config, stderr)
	}

	cfg := o.Cluster.Config
	t.config, t.name, t.serverPID = cfg, cfg.Host, o.ServerPID
	if !o.Seed {
		return t, checkAccess(ctx, *o.Cluster, o.refs())
	}
	if o.Spec.Namespace == "" {
		o.Spec.Namespace = "cachebench-" + randomSuffix()
	}
	if err := o.Cluster.Check(ctx, runSeedPermissions(o.Spec, o.Plan)...); err != nil {
		return t, err
	}
	if err := checkNewNamespace(ctx, cfg, o.Spec.Namespace); err != nil {
		return t, err
	}
	ns := o.Spec.Namespace
	t.cleanup = append(t.cleanup, func() {
		// Clean up even when the run was interrupted.
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		fmt.Fprintf(stderr, "deleting namespace %s and its dataset\n", ns)
		if err := dataset.Clean(cctx, cfg, ns, o.Spec.Name, dataset.ProgressPrinter(stderr)); err != nil {
			fmt.Fprintf(stderr, "clean up: %v\n", err)
		}
		if err := dataset.DeleteNamespace(cctx, cfg, ns); err != nil {
			fmt.Fprintf(stderr, "clean up: %v\n", err)
		}
	})
	if err := o.seedDataset(ctx, cfg, stderr); err != nil {
		return t, err
	}
	return t, checkAccess(ctx, *o.Cluster, o.refs())
}

// refs are the resources to cache with their namespaces.
func (o *RunOptions) refs() []ResourceRef {
	refs := make([]ResourceRef, len(o.Resources))
	for i, gvr := range o.Resources {
		ns := o.Spec.Namespace
		if dataset.ClusterScoped(gvr) {
			ns = ""
		}
		refs[i] = ResourceRef{GroupVersionResource: gvr, Namespace: ns}
	}
	return refs
}

func (o *runner) seedDataset(ctx context.Context, cfg *rest.Config, stderr io.Writer) error {
	spec := o.Spec
	if spec.Name == "" {
		spec.Name = "standard"
	}
	spec.Progress = dataset.ProgressPrinter(stderr)
	fmt.Fprintf(stderr, "seeding namespace %s: %s\n", spec.Namespace, counts(spec))
	start := time.Now()
	if err := dataset.Seed(ctx, cfg, spec); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	o.seeded = time.Since(start)
	fmt.Fprintf(stderr, "seeded in %s\n", o.seeded.Round(100*time.Millisecond))
	o.Spec.Name = spec.Name
	return nil
}

// grow extends the dataset to size Pods, and the other kinds in proportion.
func (o *runner) grow(ctx context.Context, cfg *rest.Config, have dataset.Spec, size int, stderr io.Writer) error {
	scale := func(n int) int { return n * size / have.Pods }
	o.Spec.Pods = size
	o.Spec.ConfigMaps, o.Spec.Secrets, o.Spec.Nodes, o.Spec.Widgets = scale(have.ConfigMaps), scale(have.Secrets), scale(have.Nodes), scale(have.Widgets)
	spec := o.Spec
	spec.Progress = dataset.ProgressPrinter(stderr)
	fmt.Fprintf(stderr, "growing the dataset in %s to %s\n", spec.Namespace, counts(spec))
	start := time.Now()
	if err := dataset.Extend(ctx, cfg, spec, have); err != nil {
		return fmt.Errorf("grow the dataset to %d pods: %w", size, err)
	}
	o.seeded = time.Since(start)
	fmt.Fprintf(stderr, "grown in %s\n", o.seeded.Round(100*time.Millisecond))
	return nil
}

func counts(s dataset.Spec) string {
	var parts []string
	for _, n := range ResourceNames {
		if c := s.Count(ResourceByName[n]); c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, n))
		}
	}
	return strings.Join(parts, ", ")
}

// datasets measures the mean object sizes of each resource cached. A failure
// only loses the sizes, not the run.
func (o *runner) datasets(ctx context.Context, t target, stderr io.Writer) []Dataset {
	var out []Dataset
	seeded := o.Spec.Name != ""
	for _, r := range o.refs() {
		selector := ""
		if seeded {
			selector = dataset.Selector(o.Spec, r.GroupVersionResource)
		}
		sizes, err := dataset.Measure(ctx, t.config, r.GroupVersionResource, r.Namespace, selector)
		if err != nil {
			fmt.Fprintf(stderr, "measure %s sizes: %v\n", r.Resource, err)
		}
		d := Dataset{
			Resource: r.Resource, Namespace: r.Namespace, Count: sizes.Count,
			JSONBytes: sizes.JSON, ProtobufBytes: sizes.Protobuf, ManagedFieldsBytes: sizes.ManagedFields,
			LastAppliedBytes: sizes.LastApplied, Seeded: seeded,
		}
		if seeded {
			d.Name, d.Count, d.SeedSeconds = o.Spec.Name, o.Spec.Count(r.GroupVersionResource), o.seeded.Seconds()
			if r.GroupVersionResource == dataset.PodsGVR {
				d.PodShape = string(o.Spec.PodShape)
			}
		}
		out = append(out, d)
		line := fmt.Sprintf("%s: %d objects, mean %.1f KB JSON", r.Resource, d.Count, sizes.JSON/1000)
		if sizes.Protobuf > 0 {
			line += fmt.Sprintf(", %.1f KB protobuf", sizes.Protobuf/1000)
		}
		fmt.Fprintln(stderr, line)
	}
	// The parent's own heap is not measured, but it shares the machine with the
	// children: give back what listing every object took.
	debug.FreeOSMemory()
	return out
}

func (o *runner) environment(t target) Environment {
	env := Environment{
		Target: t.name, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(),
		GOGC: o.GOGC, GOMEMLIMIT: o.GOMEMLIMIT, ServerArgs: strings.Join(o.ServerArgs, " "), ServerGOGC: o.ServerGOGC,
	}
	if env.GOGC == "" {
		env.GOGC = os.Getenv("GOGC")
	}
	if env.GOMEMLIMIT == "" {
		env.GOMEMLIMIT = os.Getenv("GOMEMLIMIT")
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/client-go" {
				env.ClientGo = d.Version
			}
		}
	}
	if dc, err := discovery.NewDiscoveryClientForConfig(t.config); err == nil {
		if v, err := dc.ServerVersion(); err == nil {
			env.ServerVersion = v.GitVersion
		}
	}
	return env
}

func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
