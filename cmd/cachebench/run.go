package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/pkg/dataset"
	"github.com/cachetune/cachetune/pkg/faults"
	"github.com/cachetune/cachetune/pkg/testapiserver"
)

// runOptions are the parsed flags of `cachebench run`.
type runOptions struct {
	spec       dataset.Spec
	resources  []schema.GroupVersionResource
	modes      []bench.Mode
	plan       bench.Plan
	gogc       string
	gomemlimit string
	outDir     string
	jsonPath   string
	htmlPath   string
	kubeconfig string
	seed       bool
	keepServer bool
}

// knownResources are the resources cachebench can seed and cache, by flag name.
var knownResources = map[string]schema.GroupVersionResource{
	"pods":       dataset.PodsGVR,
	"configmaps": {Version: "v1", Resource: "configmaps"},
	"secrets":    {Version: "v1", Resource: "secrets"},
	"widgets":    dataset.WidgetGVR,
}

var resourceOrder = []string{"pods", "configmaps", "secrets", "widgets"}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, listModes, err := parseRunFlags(args, stderr)
	if err != nil {
		return err
	}
	if listModes {
		return writeModeList(stdout)
	}
	return o.run(ctx, stdout, stderr)
}

func parseRunFlags(args []string, stderr io.Writer) (runOptions, bool, error) {
	fs := newFlagSet("run", `Measures what informer caches cost, mode by mode, each mode in its own child
process: time to sync, live heap and bytes per object, heap and RSS peaks during
the initial sync and during forced re-lists (a 410 Gone on the watch, through a
proxy), Go scheduler latency and the lateness of a 1 ms probe goroutine.

With no flags it starts the local kube-apiserver, seeds 10,000 realistic Pods and
runs the default modes (--modes all runs every mode; --list-modes marks the extra
ones). With --kubeconfig it measures that cluster read-only (no
objects are written) unless --seed is given, which seeds a namespace of its own
and deletes it afterwards. Prints a table; writes JSON and an HTML report to
--out.`, stderr)
	var o runOptions
	o.plan = bench.DefaultPlan()
	s := &o.spec
	fs.IntVar(&s.Pods, "pods", 10000, "number of Pods to seed")
	fs.IntVar(&s.PodEnv, "pod-env", 4, "env vars in a Pod's main container: sets the Pod size (4 is about 20 KB of JSON)")
	fs.IntVar(&s.ConfigMaps, "configmaps", 0, "number of ConfigMaps to seed")
	fs.IntVar(&s.ConfigMapBytes, "configmap-bytes", 4<<10, "data bytes per ConfigMap")
	fs.IntVar(&s.Secrets, "secrets", 0, "number of Secrets to seed")
	fs.IntVar(&s.SecretBytes, "secret-bytes", 256<<10, "data bytes per Secret")
	fs.IntVar(&s.Widgets, "widgets", 0, "number of Widget custom resources to seed (installs the CRD)")
	fs.IntVar(&s.WidgetBytes, "widget-bytes", 2<<10, "spec bytes per Widget")
	resources := fs.String("resources", "", "resources to cache, comma-separated from pods,configmaps,secrets,widgets (default: the kinds seeded; pods with --kubeconfig)")
	modes := fs.String("modes", "", "modes to run: comma-separated names or globs, e.g. 'client-go/typed*', or all (default: every mode not marked extra in --list-modes)")
	listModes := fs.Bool("list-modes", false, "list the modes and exit")
	fs.IntVar(&o.plan.Relists, "relists", o.plan.Relists, "forced re-lists per mode")
	settle := fs.Duration("settle", o.plan.Settle.D(), "wait after the sync and after each re-list before reading the live heap")
	idle := fs.Duration("idle", o.plan.Idle.D(), "idle window after the sync, for latencies at rest")
	fs.StringVar(&o.gogc, "gogc", "", "GOGC for the children (default: inherited)")
	fs.StringVar(&o.gomemlimit, "gomemlimit", "", "GOMEMLIMIT for the children, e.g. 512MiB (default: inherited)")
	fs.StringVar(&o.outDir, "out", "out", "directory for the report (cachebench.json, cachebench.html) and the children's logs")
	fs.StringVar(&o.jsonPath, "json", "", "also write the JSON report to this file; - writes it to stdout and the table to stderr")
	fs.StringVar(&o.htmlPath, "html", "", "also write the HTML report to this file")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "measure the cluster of this kubeconfig instead of the local server")
	fs.BoolVar(&o.seed, "seed", false, "with --kubeconfig: seed a namespace of cachebench's own, and delete it afterwards")
	fs.StringVar(&s.Namespace, "namespace", "", "namespace to seed and cache (default: cachebench locally; all namespaces with --kubeconfig; a new cachebench-<random> with --seed)")
	fs.BoolVar(&o.keepServer, "keep-server", false, "keep the local kube-apiserver running after the run, until interrupted")
	if err := parseFlags(fs, args); err != nil {
		return o, false, err
	}
	if *listModes {
		return o, true, nil
	}
	o.plan.Settle, o.plan.Idle = bench.Duration(*settle), bench.Duration(*idle)
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := o.validate(set, *resources, *modes); err != nil {
		return o, false, usageError{err}
	}
	return o, false, nil
}

func (o *runOptions) validate(set map[string]bool, resources, modes string) error {
	s := &o.spec
	for name, v := range map[string]int{"pods": s.Pods, "configmaps": s.ConfigMaps, "secrets": s.Secrets, "widgets": s.Widgets,
		"pod-env": s.PodEnv, "configmap-bytes": s.ConfigMapBytes, "secret-bytes": s.SecretBytes, "widget-bytes": s.WidgetBytes} {
		if v < 0 {
			return fmt.Errorf("--%s must not be negative, got %d", name, v)
		}
	}
	if err := o.plan.Validate(); err != nil {
		return err
	}
	if o.gogc != "" && o.gogc != "off" {
		if n, err := strconv.Atoi(o.gogc); err != nil || n < 0 {
			return fmt.Errorf("--gogc must be a non-negative integer or off, got %q", o.gogc)
		}
	}
	if o.gomemlimit != "" && !memLimit.MatchString(o.gomemlimit) {
		return fmt.Errorf("--gomemlimit must be a byte count with an optional unit (B, KiB, MiB, GiB, TiB) or off, got %q", o.gomemlimit)
	}
	if o.kubeconfig == "" {
		if o.seed {
			return errors.New("--seed needs --kubeconfig (the local server is always seeded)")
		}
	} else {
		if o.keepServer {
			return errors.New("--keep-server applies to the local server, not with --kubeconfig")
		}
		if !o.seed {
			for _, f := range []string{"pods", "pod-env", "configmaps", "configmap-bytes", "secrets", "secret-bytes", "widgets", "widget-bytes"} {
				if set[f] {
					return fmt.Errorf("--%s seeds objects: with --kubeconfig it needs --seed (runs on a cluster are read-only otherwise)", f)
				}
			}
		}
	}
	var err error
	if o.resources, err = o.pickResources(resources); err != nil {
		return err
	}
	if o.modes, err = bench.Select(modes); err != nil {
		return err
	}
	for _, gvr := range o.resources {
		if len(modesFor(o.modes, gvr)) == 0 {
			return fmt.Errorf("none of the selected modes can cache %s", gvr.Resource)
		}
	}
	return nil
}

var memLimit = regexp.MustCompile(`^(off|[0-9]+(B|KiB|MiB|GiB|TiB)?)$`)

// pickResources parses --resources; by default the kinds seeded, or pods on a
// cluster that is only read.
func (o *runOptions) pickResources(list string) ([]schema.GroupVersionResource, error) {
	var names []string
	switch {
	case strings.TrimSpace(list) != "":
		for _, n := range strings.Split(list, ",") {
			names = append(names, strings.TrimSpace(n))
		}
	case o.kubeconfig != "" && !o.seed:
		names = []string{"pods"}
	default:
		counts := map[string]int{"pods": o.spec.Pods, "configmaps": o.spec.ConfigMaps, "secrets": o.spec.Secrets, "widgets": o.spec.Widgets}
		for _, n := range resourceOrder {
			if counts[n] > 0 {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			return nil, errors.New("nothing to measure: every object count is 0")
		}
	}
	var out []schema.GroupVersionResource
	for _, n := range names {
		gvr, ok := knownResources[n]
		if !ok {
			return nil, fmt.Errorf("unknown resource %q in --resources (known: %s)", n, strings.Join(resourceOrder, ", "))
		}
		out = append(out, gvr)
	}
	return out, nil
}

func modesFor(modes []bench.Mode, gvr schema.GroupVersionResource) []bench.Mode {
	var out []bench.Mode
	for _, m := range modes {
		if m.Supports == nil || m.Supports(gvr) {
			out = append(out, m)
		}
	}
	return out
}

func writeModeList(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, m := range bench.Modes() {
		extra := ""
		if m.Extra {
			extra = "(extra: --modes all or by name)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", m.Name, m.Title, extra)
	}
	return tw.Flush()
}

// target is the cluster being measured and how to undo what the run did to it.
type target struct {
	config  *rest.Config
	name    string
	cleanup []func()
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
	t, err := o.prepare(ctx, stderr)
	defer func() {
		for i := len(t.cleanup) - 1; i >= 0; i-- {
			t.cleanup[i]()
		}
	}()
	if err != nil {
		return err
	}

	report := bench.Report{
		Schema:      bench.ReportSchema,
		Started:     started,
		Environment: o.environment(t),
		Plan:        o.plan,
	}
	report.Datasets = o.datasets(ctx, t, stderr)

	proxy, err := faults.Start(t.config)
	if err != nil {
		return fmt.Errorf("start the fault proxy: %w", err)
	}
	defer proxy.Close()
	srv := proxyServer{p: proxy, namespace: o.spec.Namespace}
	childConfig := proxy.Config(t.config)

	exe, err := os.Executable()
	if err != nil {
		return err
	}
	type job struct {
		mode bench.Mode
		gvr  schema.GroupVersionResource
	}
	var jobs []job
	for _, gvr := range o.resources {
		for _, m := range modesFor(o.modes, gvr) {
			jobs = append(jobs, job{m, gvr})
		}
	}
	var failed int
	for i, j := range jobs {
		res, err := o.runMode(ctx, exe, j.mode, j.gvr, childConfig, srv, fmt.Sprintf("%d/%d", i+1, len(jobs)), stderr)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			failed++
			res.Error = err.Error()
		}
		report.Results = append(report.Results, res)
	}
	report.Finished = time.Now()

	if err := bench.WriteTable(tableOut, report); err != nil {
		return err
	}
	if err := o.writeReports(report, stdout, stderr); err != nil {
		return err
	}
	if o.keepServer && t.name == "local kube-apiserver" {
		fmt.Fprintln(stderr, "kube-apiserver kept running; press Ctrl-C to stop it")
		<-ctx.Done()
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d modes failed (details in the table and in %s)", failed, len(jobs), filepath.Join(o.outDir, "logs"))
	}
	return nil
}

// runMode measures one mode in a child and prints its progress on one line.
func (o *runOptions) runMode(ctx context.Context, exe string, m bench.Mode, gvr schema.GroupVersionResource, cfg *rest.Config, srv bench.Server, pos string, stderr io.Writer) (bench.Result, error) {
	logPath := filepath.Join(o.outDir, "logs", strings.ReplaceAll(m.Name, "/", "_")+"."+gvr.Resource+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return bench.Result{Mode: m.Name, Title: m.Title, Resource: gvr.Resource, Streaming: m.Streaming}, err
	}
	defer logFile.Close()
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
		fmt.Fprintf(stderr, ", %s", gvr.Resource)
	}
	fmt.Fprint(stderr, "): ")
	res, err := bench.RunChild(ctx, bench.ChildSpec{
		Command: cmd, Mode: m, Resource: gvr, Namespace: o.spec.Namespace, Config: cfg, Plan: o.plan, Env: env,
		Events: func(e bench.Event) { fmt.Fprint(stderr, progressText(e, o.plan.Relists)) },
	}, srv)
	if err != nil {
		fmt.Fprintf(stderr, "FAILED: %v (log: %s)\n", err, logPath)
		return res, err
	}
	fmt.Fprintf(stderr, "server saw %s\n", serverPath(res.ListPath.Server))
	return res, nil
}

func progressText(e bench.Event, relists int) string {
	switch e.Kind {
	case "syncing":
		return "syncing... "
	case "synced":
		return fmt.Sprintf("%d objects in %.1fs; ", e.Objects, e.Seconds)
	case "relist":
		return fmt.Sprintf("re-list %d/%d ", e.Index, relists)
	case "relisted":
		if e.Error != "" {
			return fmt.Sprintf("failed (%s); ", e.Error)
		}
		return fmt.Sprintf("%.1fs, peak %.2fx live; ", e.Seconds, e.PeakRatio)
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
		srv, err := testapiserver.Start(ctx, testapiserver.Options{Progress: stderr})
		if err != nil {
			return t, err
		}
		t.config, t.name = srv.Config, "local kube-apiserver"
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
	t.config, t.name = cfg, cfg.Host
	if err := checkProxyable(cfg); err != nil {
		return t, err
	}
	if !o.seed {
		return t, checkAccess(ctx, cfg, o.resources, o.spec.Namespace)
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
	return t, checkAccess(ctx, cfg, o.resources, ns)
}

func (o *runOptions) seedDataset(ctx context.Context, cfg *rest.Config, stderr io.Writer) error {
	spec := o.spec
	spec.Name = "standard"
	spec.Progress = dataset.ProgressPrinter(stderr)
	fmt.Fprintf(stderr, "seeding namespace %s: %d pods, %d configmaps, %d secrets, %d widgets\n", spec.Namespace, spec.Pods, spec.ConfigMaps, spec.Secrets, spec.Widgets)
	start := time.Now()
	if err := dataset.Seed(ctx, cfg, spec); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	fmt.Fprintf(stderr, "seeded in %s\n", time.Since(start).Round(100*time.Millisecond))
	o.spec.Name = spec.Name
	return nil
}

// datasets measures the mean object sizes of each resource cached. A failure
// only loses the sizes, not the run.
func (o *runOptions) datasets(ctx context.Context, t target, stderr io.Writer) []bench.Dataset {
	var out []bench.Dataset
	selector := ""
	if o.spec.Name != "" {
		selector = dataset.LabelDataset + "=" + o.spec.Name
	}
	for _, gvr := range o.resources {
		sizes, err := dataset.Measure(ctx, t.config, gvr, o.spec.Namespace, selector)
		if err != nil {
			fmt.Fprintf(stderr, "measure %s sizes: %v\n", gvr.Resource, err)
		}
		out = append(out, bench.Dataset{
			Resource: gvr.Resource, Namespace: o.spec.Namespace, Count: sizes.Count,
			JSONBytes: sizes.JSON, ProtobufBytes: sizes.Protobuf, ManagedFieldsBytes: sizes.ManagedFields,
			LastAppliedBytes: sizes.LastApplied, Seeded: o.spec.Name != "",
		})
		line := fmt.Sprintf("%s: %d objects, mean %.1f KB JSON", gvr.Resource, sizes.Count, sizes.JSON/1000)
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
		{filepath.Join(o.outDir, "cachebench.html"), bench.WriteHTML},
		{o.jsonPath, bench.WriteJSON},
		{o.htmlPath, bench.WriteHTML},
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

// proxyServer adapts the fault proxy to what bench needs.
type proxyServer struct {
	p         *faults.Proxy
	namespace string
}

func (s proxyServer) EndWatches(resource string) int {
	return s.p.EndWatches(faults.Match{Resource: resource, Namespace: s.namespace}, faults.Gone())
}

func (s proxyServer) ResetCounts() { s.p.ResetCounts() }

func (s proxyServer) Counts(resource string) bench.Requests {
	c := s.p.Counts().ByResourceVerb[resource]
	return bench.Requests{List: c[faults.List], WatchList: c[faults.WatchList], Watch: c[faults.Watch]}
}

func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
