package main

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

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/internal/bench/report"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
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

// job is one child process: a mode and the resources it caches.
type job struct {
	mode bench.Mode
	refs []bench.ResourceRef
}

func (o *runOptions) run(ctx context.Context, stdout, stderr io.Writer) (err error) {
	started := time.Now()
	tableOut := stdout
	if o.jsonPath == "-" {
		tableOut = stderr
	}
	if err := os.MkdirAll(filepath.Join(o.outDir, "logs"), 0o755); err != nil {
		return err
	}
	if o.cpuProfile != "" {
		if err := os.MkdirAll(o.cpuProfile, 0o755); err != nil {
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

	rep := bench.Report{
		Schema:      bench.ReportSchema,
		Started:     started,
		Environment: o.environment(t),
		Plan:        o.plan,
	}
	proxy, err := faults.Start(t.config)
	if err != nil {
		return fmt.Errorf("start the fault proxy: %w", err)
	}
	defer proxy.Close()
	srv := proxyServer{p: proxy}
	childConfig := proxy.Config(t.config)
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	jobs := o.jobs()
	sizes := o.sizes
	if len(sizes) == 0 {
		sizes = []int{o.spec.Pods}
	}
	var failed, total int
	have := dataset.Spec{}
	var last []bench.Result // the results at the previous size
sizes:
	for si, size := range sizes {
		var fit room
		if si > 0 {
			var serverRSS uint64
			if t.local() {
				serverRSS = processRSS(t.serverPID)
			}
			fit = projectRoom(last, have.Pods, size, memAvailable(), serverRSS)
			if ok, why := fit.serverFits(); !ok && fit.available > 0 {
				note := fmt.Sprintf("stopped before %d pods: %s", size, why)
				_, _ = fmt.Fprintln(stderr, note)
				rep.Skipped = append(rep.Skipped, note)
				break sizes
			}
			if err := o.grow(ctx, t.config, have, size, stderr); err != nil {
				return err
			}
		}
		have = o.spec
		last = nil
		rep.Datasets = append(rep.Datasets, o.datasets(ctx, t, stderr)...)
		churn, err := o.churner(t)
		if err != nil {
			return err
		}
		for i, j := range jobs {
			pos := fmt.Sprintf("%d/%d", i+1, len(jobs))
			if len(sizes) > 1 {
				pos = fmt.Sprintf("%s at %d pods", pos, size)
			}
			if ok, why := fit.modeFits(j.mode.Name); !ok && fit.available > 0 {
				note := fmt.Sprintf("%s left out at %d pods: %s", j.mode.Name, size, why)
				fmt.Fprintf(stderr, "mode %s: %s\n", pos, note)
				rep.Skipped = append(rep.Skipped, note)
				continue
			}
			res, err := o.runMode(ctx, exe, j, childConfig, srv, t, churn, pos, stderr)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			total++
			if err != nil {
				failed++
				res.Error = err.Error()
			}
			rep.Results = append(rep.Results, res)
			last = append(last, res)
			if churn != nil {
				if err := churn.Restore(ctx); err != nil {
					return fmt.Errorf("restore the dataset after mode %s: %w", j.mode.Name, err)
				}
			}
		}
	}
	rep.Finished = time.Now()

	if err := report.WriteTable(tableOut, rep); err != nil {
		return err
	}
	if err := o.writeReports(rep, stdout, stderr); err != nil {
		return err
	}
	if o.keepServer && o.kubeconfig == "" {
		fmt.Fprintln(stderr, "kube-apiserver kept running; press Ctrl-C to stop it")
		<-ctx.Done()
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d modes failed (details in the table and in %s)", failed, total, filepath.Join(o.outDir, "logs"))
	}
	return nil
}

// jobs lists the child processes of one dataset size: a mode per resource, or
// a mode for all resources together.
func (o *runOptions) jobs() []job {
	refs := o.refs()
	var jobs []job
	if o.together {
		for _, m := range o.modes {
			jobs = append(jobs, job{m, refs})
		}
		return jobs
	}
	for _, r := range refs {
		for _, m := range modesFor(o.modes, r.GroupVersionResource) {
			jobs = append(jobs, job{m, []bench.ResourceRef{r}})
		}
	}
	return jobs
}

// churner returns what writes the changes before each re-list, or nil when the
// plan changes nothing.
func (o *runOptions) churner(t target) (*dataset.Churner, error) {
	if !slices.ContainsFunc(o.plan.Churn, func(c float64) bool { return c > 0 }) {
		return nil, nil
	}
	return dataset.NewChurner(t.config, o.spec, o.plan.ChurnSeed)
}

// runMode measures one mode in a child and prints its progress on one line.
func (o *runOptions) runMode(ctx context.Context, exe string, j job, cfg *rest.Config, srv bench.Server, t target, churn *dataset.Churner, pos string, stderr io.Writer) (bench.Result, error) {
	m := j.mode
	names := make([]string, len(j.refs))
	for i, r := range j.refs {
		names[i] = r.Resource
	}
	what := strings.Join(names, "+")
	logPath := filepath.Join(o.outDir, "logs", fileName(m.Name, what, o.spec.Pods, len(o.sizes) > 1)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return bench.Result{Mode: m.Name, Title: m.Title, Resource: strings.Join(names, ","), Streaming: m.Streaming}, err
	}
	defer logFile.Close()
	if m.Program != nil {
		exe = o.programs[m.Program.Name]
	}
	cmd := exec.Command(exe, "child")
	cmd.Stderr = logFile
	var env []string
	if o.gogc != "" {
		env = append(env, "GOGC="+o.gogc)
	}
	if o.gomemlimit != "" {
		env = append(env, "GOMEMLIMIT="+o.gomemlimit)
	}
	fmt.Fprintf(stderr, "mode %s: %s (%s", pos, m.Name, m.Title)
	if len(o.resources) > 1 {
		fmt.Fprintf(stderr, ", %s", what)
	}
	fmt.Fprint(stderr, "): ")
	spec := bench.ChildSpec{
		Command: cmd, Mode: m, Resources: j.refs, Config: cfg, Plan: o.plan, Env: env,
		Events: func(e bench.Event) { fmt.Fprint(stderr, progressText(e, o.plan.Relists)) },
	}
	if churn != nil {
		spec.Churn = func(ctx context.Context, fraction float64) (dataset.Changes, error) {
			var total dataset.Changes
			for _, r := range j.refs {
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
		spec.ServerMetrics = storageReader(t.config, j.refs)
	}
	if o.cpuProfile != "" {
		spec.CPUProfile = filepath.Join(o.cpuProfile, fileName(m.Name, what, o.spec.Pods, len(o.sizes) > 1)+".sync.pprof")
	}
	res, err := bench.RunChild(ctx, spec, srv)
	if err != nil {
		fmt.Fprintf(stderr, "FAILED: %v (log: %s)\n", err, logPath)
		return res, err
	}
	fmt.Fprintf(stderr, "server saw %s\n", serverPath(res.ListPath.Server))
	return res, nil
}

// fileName names a mode's log and profile files.
func fileName(mode, resources string, pods int, sized bool) string {
	name := strings.ReplaceAll(mode, "/", "_") + "." + resources
	if sized {
		name += fmt.Sprintf(".%d", pods)
	}
	return name
}

func progressText(e bench.Event, relists int) string {
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

func serverPath(q bench.Requests) string {
	return fmt.Sprintf("%d LIST, %d streaming list, %d watch requests", q.List, q.WatchList, q.Watch)
}

// prepare starts the local server or connects to the cluster, checks access
// and seeds the dataset.
func (o *runOptions) prepare(ctx context.Context, stderr io.Writer) (target, error) {
	var t target
	if o.kubeconfig == "" {
		if o.spec.Namespace == "" {
			o.spec.Namespace = "cachebench"
		}
		srv, err := apiserver.Start(ctx, apiserver.Options{Progress: stderr})
		if err != nil {
			return t, err
		}
		t.config, t.name, t.serverPID = srv.Config, "local kube-apiserver", srv.PID
		if o.keepServer {
			fmt.Fprintf(stderr, "kube-apiserver kept for after the run: export KUBECONFIG=%s\n", srv.Kubeconfig)
		}
		t.cleanup = append(t.cleanup, func() { _ = srv.Stop() })
		return t, o.seedDataset(ctx, t.config, stderr)
	}

	cfg, err := loadKubeconfig(o.kubeconfig)
	if err != nil {
		return t, err
	}
	t.config, t.name, t.serverPID = cfg, cfg.Host, o.serverPID
	if err := checkProxyable(cfg); err != nil {
		return t, err
	}
	if !o.seed {
		return t, checkAccess(ctx, cfg, o.refs())
	}
	if o.spec.Namespace == "" {
		o.spec.Namespace = "cachebench-" + randomSuffix()
	}
	if err := checkNewNamespace(ctx, cfg, o.spec.Namespace); err != nil {
		return t, err
	}
	ns := o.spec.Namespace
	t.cleanup = append(t.cleanup, func() {
		// Clean up even when the run was interrupted.
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		fmt.Fprintf(stderr, "deleting namespace %s and its dataset\n", ns)
		if err := dataset.Clean(cctx, cfg, ns, o.spec.Name, dataset.ProgressPrinter(stderr)); err != nil {
			fmt.Fprintf(stderr, "clean up: %v\n", err)
		}
		if err := dataset.DeleteNamespace(cctx, cfg, ns); err != nil {
			fmt.Fprintf(stderr, "clean up: %v\n", err)
		}
	})
	if err := o.seedDataset(ctx, cfg, stderr); err != nil {
		return t, err
	}
	return t, checkAccess(ctx, cfg, o.refs())
}

// refs are the resources to cache with their namespaces.
func (o *runOptions) refs() []bench.ResourceRef {
	refs := make([]bench.ResourceRef, len(o.resources))
	for i, gvr := range o.resources {
		ns := o.spec.Namespace
		if dataset.ClusterScoped(gvr) {
			ns = ""
		}
		refs[i] = bench.ResourceRef{GroupVersionResource: gvr, Namespace: ns}
	}
	return refs
}

func (o *runOptions) seedDataset(ctx context.Context, cfg *rest.Config, stderr io.Writer) error {
	spec := o.spec
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
	o.spec.Name = spec.Name
	return nil
}

// grow extends the dataset to size Pods, and the other kinds in proportion.
func (o *runOptions) grow(ctx context.Context, cfg *rest.Config, have dataset.Spec, size int, stderr io.Writer) error {
	scale := func(n int) int { return n * size / have.Pods }
	o.spec.Pods = size
	o.spec.ConfigMaps, o.spec.Secrets, o.spec.Nodes, o.spec.Widgets = scale(have.ConfigMaps), scale(have.Secrets), scale(have.Nodes), scale(have.Widgets)
	spec := o.spec
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
	for _, n := range resourceOrder {
		if c := s.Count(knownResources[n]); c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, n))
		}
	}
	return strings.Join(parts, ", ")
}

// datasets measures the mean object sizes of each resource cached. A failure
// only loses the sizes, not the run.
func (o *runOptions) datasets(ctx context.Context, t target, stderr io.Writer) []bench.Dataset {
	var out []bench.Dataset
	seeded := o.spec.Name != ""
	for _, r := range o.refs() {
		selector := ""
		if seeded {
			selector = dataset.Selector(o.spec, r.GroupVersionResource)
		}
		sizes, err := dataset.Measure(ctx, t.config, r.GroupVersionResource, r.Namespace, selector)
		if err != nil {
			fmt.Fprintf(stderr, "measure %s sizes: %v\n", r.Resource, err)
		}
		d := bench.Dataset{
			Resource: r.Resource, Namespace: r.Namespace, Count: sizes.Count,
			JSONBytes: sizes.JSON, ProtobufBytes: sizes.Protobuf, ManagedFieldsBytes: sizes.ManagedFields,
			LastAppliedBytes: sizes.LastApplied, Seeded: seeded,
		}
		if seeded {
			d.Name, d.Count, d.SeedSeconds = o.spec.Name, o.spec.Count(r.GroupVersionResource), o.seeded.Seconds()
			if r.GroupVersionResource == dataset.PodsGVR {
				d.PodShape = string(o.spec.PodShape)
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

func (o *runOptions) environment(t target) bench.Environment {
	env := bench.Environment{
		Target: t.name, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(),
		GOGC: o.gogc, GOMEMLIMIT: o.gomemlimit,
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

func (o *runOptions) writeReports(r bench.Report, stdout, stderr io.Writer) error {
	write := func(path string, f func(io.Writer, bench.Report) error) error {
		if path == "-" {
			return f(stdout, r)
		}
		file, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := f(file, r); err != nil {
			file.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := file.Close(); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", path)
		return nil
	}
	paths := []struct {
		path string
		f    func(io.Writer, bench.Report) error
	}{
		{filepath.Join(o.outDir, "cachebench.json"), bench.WriteJSON},
		{filepath.Join(o.outDir, "cachebench.html"), report.WriteHTML},
		{o.jsonPath, bench.WriteJSON},
		{o.htmlPath, report.WriteHTML},
	}
	for _, p := range paths {
		if p.path == "" {
			continue
		}
		if err := write(p.path, p.f); err != nil {
			return err
		}
	}
	return nil
}

func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
