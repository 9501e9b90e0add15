package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/internal/bench/report"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// runOptions are the parsed flags of `cachebench run`: the run itself, the
// cluster it measures, and where its report goes.
type runOptions struct {
	bench.RunOptions
	cluster *clusterFlags
	// onCluster is set when a cluster flag names a cluster: the run measures
	// it instead of the local server.
	onCluster bool
	output    string
	// jsonPath and htmlPath are the deprecated --json and --html.
	jsonPath string
	htmlPath string
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, listModes, err := parseRunFlags(args, stdout, stderr)
	if err != nil {
		return err
	}
	if listModes {
		return writeModeList(stdout)
	}
	return o.run(ctx, stdout, stderr)
}

// run connects to the cluster (or leaves the local server to bench.Run),
// measures, then writes the table (on stdout, or stderr when the JSON goes to
// stdout) and the report files while the cluster is still up.
func (o *runOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	if err := o.connect(stderr); err != nil {
		return err
	}
	tableOut := stdout
	if o.output == "json" || o.jsonPath == "-" {
		tableOut = stderr
	}
	o.Write = func(r bench.Report) error {
		if err := report.WriteTable(tableOut, r); err != nil {
			return err
		}
		if o.output == "json" {
			if err := bench.WriteJSON(stdout, r); err != nil {
				return err
			}
		}
		return o.writeReports(r, stdout, stderr)
	}
	return bench.Run(ctx, o.RunOptions, stderr)
}

// connect resolves the cluster flags: the cluster and namespace to measure,
// or the namespace to seed on the local server.
func (o *runOptions) connect(stderr io.Writer) error {
	if !o.onCluster {
		noteKubeconfigEnv(stderr, "run")
		return nil
	}
	t, err := o.cluster.target()
	if err != nil {
		return err
	}
	o.Cluster = &t
	if o.Seed {
		// A namespace of the run's own, deleted afterwards: -n, or a new
		// cachebench-<random>; never the context's.
		o.Spec.Namespace = o.cluster.source.Overrides.Context.Namespace
		return nil
	}
	o.Spec.Namespace, err = o.cluster.namespace()
	return err
}

func parseRunFlags(args []string, stdout, stderr io.Writer) (runOptions, bool, error) {
	fs := newFlagSet("run", `Measures what informer caches cost, mode by mode, each mode in its own child
process: time and CPU to sync, live heap and bytes per object, heap and RSS peaks
during the initial sync and during forced re-lists (a 410 Gone on the watch,
through a proxy), Go scheduler latency and the lateness of a 1 ms probe
goroutine; on the local server also the server's CPU, RSS and storage reads.
Between the 410 and each re-list, --churn changes a share of the objects
(updates, creates and deletes, the same for every mode), so that a re-list
decodes and delivers real changes.

With no flags it starts the local kube-apiserver, seeds 10,000 realistic Pods and
runs the default modes (--modes all runs every mode; --list-modes marks the extra
ones). --dataset mixed seeds Pods, ConfigMaps, Secrets, Nodes and Widgets at the
ratios of a typical controller's cache and caches them together in each mode's
process; --sizes measures the modes at several dataset sizes (a scale run).

Given a cluster (--kubeconfig, --context or another of kubectl's cluster flags)
it measures that cluster instead, read-only (no objects are written): the
namespace -n, else the context's, else cachebench; -A reads every namespace.
With --seed it seeds a namespace of its own (-n names it; it must not exist)
and deletes it afterwards. Any kubeconfig works, whatever its user
authenticates with (client certificate, token, exec plugin): the proxy that
forces the re-lists authenticates as that user, as kubectl proxy does. It
first checks that the cluster answers, accepts the credentials, and lets the
user list and watch the resources (and write the dataset, with --seed).

Prints a table (-o json: the JSON report instead, the table on stderr); writes
the JSON and an HTML report, and the children's logs, to --out-dir.

The controller-runtime modes (--modes 'controller-runtime/*', extra) measure a
controller-runtime Manager's cache: its defaults, TransformStripManagedFields,
UnsafeDisableDeepCopy, and leancache (leanstore's informers under the same
cache), with and without sharing. Their child program, cachebench-cr, lives in
the controllerruntime module (this one never requires controller-runtime):
cachebench builds it into bin/ with go build once per run, which needs a
cachetune checkout and takes a few seconds when nothing changed, or runs the
file given with --controller-runtime-child. Every mode also reads all its
cached objects once, as a reconcile listing them does (the list columns):
client-go's and leanstore's listers hand out the cached objects, while
controller-runtime's client deep-copies each unless UnsafeDisableDeepCopy.`, stdout, stderr)
	var o runOptions
	o.Plan = bench.DefaultPlan()
	o.cluster = fs.withCluster(true)
	out := fs.withOutput("table", "json")
	s := &o.Spec
	datasetFlags(fs, s)
	shape := fs.String("pod-shape", "workload", "workload: the Pods of each of eight workloads share their template; unique: every Pod has its own env values, image tag and template hash; distinct: every Pod differs in labels, annotations, containers and env (about 19.7 KB of JSON)")
	fs.IntVar(&s.Nodes, "nodes", 0, "number of Nodes to seed (local server only: a cluster's scheduler would use them)")
	kind := fs.String("dataset", "standard", "standard: the counts above; mixed: per 10,000 --pods, 2,000 ConfigMaps, 1,000 Secrets of 8 KiB, 100 Nodes and 500 Widgets, cached together (counts given as flags win)")
	resources := fs.String("resources", "", "resources to cache, comma-separated from "+strings.Join(bench.ResourceNames, ",")+" (default: the kinds seeded; pods on a cluster)")
	fs.BoolVar(&o.Together, "together", false, "cache all --resources in one process per mode, as one controller does (default with --dataset mixed)")
	modes := fs.String("modes", "", "modes to run: comma-separated names or globs, e.g. 'client-go/typed*', or all (default: every mode not marked extra in --list-modes)")
	modeOrder := fs.String("mode-order", "list", "the order the modes run in: list, as --list-modes lists them; given, as --modes names them (each glob's modes in list order), to run the modes a run compares side by side in time")
	listModes := fs.Bool("list-modes", false, "list the modes and exit")
	fs.IntVar(&o.Plan.Relists, "relists", o.Plan.Relists, "forced re-lists per mode (with no --churn: that many re-lists without changes)")
	fs.IntVar(&o.Plan.Rounds, "rounds", 1, "run every mode this many times, each in a process of its own, the modes taking turns (the order reversed every other round); the summary gives each mode's medians (sync CPU, start-up peak, forced collections and, with --events, each step's CPU per event and p99) and their ratios to client-go's cache of the same kind, and the HTML report's events charts draw the medians: on a shared machine, one run of a mode can take twice the CPU of the next")
	churn := fs.String("churn", "", "fraction of the objects changed before each re-list, comma-separated, one per re-list (default 0,0.1; 0s on a cluster without --seed)")
	fs.Uint64Var(&o.Plan.ChurnSeed, "churn-seed", o.Plan.ChurnSeed, "seed that picks the objects --churn changes")
	sizes := fs.String("sizes", "", "scale run: Pod counts to measure at, comma-separated, e.g. 1000,10000 (the dataset grows from one to the next; local server only)")
	fs.StringVar(&o.CPUProfiles, "cpu-profiles", "", "directory for a CPU profile of each mode's initial sync (<mode>.<resources>.sync.pprof) and, with --events, of its event steps (<mode>.<resources>.events.pprof)")
	fs.StringVar(&o.AllocProfiles, "alloc-profiles", "", "directory for an allocation profile of each mode's initial sync, from the start to the settle after it synced (<mode>.<resources>.sync.allocs.pprof; go tool pprof -sample_index=alloc_space): what the list and the hand-over to the cache allocated. Allocations are sampled every 4 KB, which costs CPU: use it in a run of its own, not for CPU figures")
	events, eventStep := fs.String("events", "", eventsUsage), fs.Duration("event-step", 30*time.Second, "how long --events holds each rate")
	eventSample := fs.Duration("event-sample-every", bench.DefaultEvents().SampleEvery.D(), "heap sampling and probe interval during --events: coarser than --sample-every so that their own CPU, which each step's CPU per event leaves out as the idle rate, stays small beside the events'")
	fs.Func("sample-every", fmt.Sprintf("heap and RSS sampling interval (default %s)", o.Plan.SampleEvery.D()), func(v string) error { return parseDuration(v, &o.Plan.SampleEvery) })
	settle := fs.Duration("settle", o.Plan.Settle.D(), "wait after the sync and after each re-list before reading the live heap")
	idle := fs.Duration("idle", o.Plan.Idle.D(), "idle window after the sync, for latencies at rest")
	fs.StringVar(&o.GOGC, "gogc", "", "GOGC for the children (default: inherited)")
	fs.StringVar(&o.GOMEMLIMIT, "gomemlimit", "", "GOMEMLIMIT for the children, e.g. 512MiB (default: inherited)")
	fs.Func("apiserver-args", "extra kube-apiserver flags for the local server, space separated (as for cachebench apiserver), e.g. '--watch-cache=false' (recorded in the report)", func(v string) error {
		o.ServerArgs = strings.Fields(v)
		return nil
	})
	fs.StringVar(&o.ServerGOGC, "apiserver-gogc", "", "GOGC of the local server alone, never of the children (default 300, or GOGC from the environment)")
	fs.StringVar(&o.OutDir, "out-dir", "out", "directory for the report (cachebench.json, cachebench.html) and the children's logs")
	fs.StringVar(&o.OutDir, "out", "out", "directory for the report")
	fs.deprecated("out", "--out-dir")
	fs.StringVar(&o.jsonPath, "json", "", "also write the JSON report to this file; - writes it to stdout and the table to stderr")
	fs.deprecated("json", "-o json (the report on stdout) or --out-dir (cachebench.json in it)")
	fs.StringVar(&o.htmlPath, "html", "", "also write the HTML report to this file")
	fs.deprecated("html", "--out-dir (cachebench.html in it)")
	fs.BoolVar(&o.Seed, "seed", false, "on a cluster: seed a namespace of cachebench's own (-n names it), and delete it afterwards")
	fs.IntVar(&o.ServerPID, "server-pid", 0, "on a cluster: the API server's process on this machine (a server of your own, e.g. 'cachebench apiserver'), to read its CPU, RSS and storage metrics for each window as for the local server")
	fs.StringVar(&o.ControllerRuntimeChild, "controller-runtime-child", "", "the controller-runtime modes' child program, built beforehand (cd controllerruntime && go build -o FILE ./cmd/cachebench-cr); default: built into bin/ of the checkout")
	fs.BoolVar(&o.KeepServer, "keep-server", false, "keep the local kube-apiserver running after the run, until interrupted")
	if err := fs.parse(args); err != nil {
		return o, false, err
	}
	if *listModes {
		return o, true, nil
	}
	o.output = out.value
	o.onCluster = o.cluster.selected()
	if !o.onCluster {
		o.Spec.Namespace = o.cluster.localNamespace()
	}
	o.Plan.Settle, o.Plan.Idle = bench.Duration(*settle), bench.Duration(*idle)
	set := fs.set
	if set["out"] && set["out-dir"] {
		return o, false, usageError{errors.New("--out is the old spelling of --out-dir: give one")}
	}
	if err := o.validate(set, flagValues{resources: *resources, modes: *modes, modeOrder: *modeOrder, churn: *churn, sizes: *sizes, shape: *shape, dataset: *kind, events: *events, eventStep: *eventStep, eventSample: *eventSample}); err != nil {
		return o, false, usageError{err}
	}
	return o, false, nil
}

// flagValues are the flags validate parses itself.
type flagValues struct {
	resources, modes, modeOrder, churn, sizes, shape, dataset, events string
	eventStep, eventSample                                            time.Duration
}

// validate parses the flags that need it and checks them together, in this
// order, so that the first problem on the command line is the one reported.
func (o *runOptions) validate(set map[string]bool, fv flagValues) error {
	s := &o.Spec
	var err error
	if s.PodShape, err = dataset.ParsePodShape(fv.shape); err != nil {
		return fmt.Errorf("--pod-shape: %w", err)
	}
	if err := o.parseSizes(set, fv.sizes); err != nil {
		return err
	}
	if err := o.applyDataset(set, fv.dataset); err != nil {
		return err
	}
	for name, v := range map[string]int{"pods": s.Pods, "configmaps": s.ConfigMaps, "secrets": s.Secrets, "nodes": s.Nodes, "widgets": s.Widgets,
		"pod-env": s.PodEnv, "configmap-bytes": s.ConfigMapBytes, "secret-bytes": s.SecretBytes, "widget-bytes": s.WidgetBytes} {
		if v < 0 {
			return fmt.Errorf("--%s must not be negative, got %d", name, v)
		}
	}
	if err := o.parseChurn(set, fv.churn); err != nil {
		return err
	}
	if err := o.parseEvents(fv.events, fv.eventStep, fv.eventSample); err != nil {
		return err
	}
	if err := o.Plan.Validate(); err != nil {
		return err
	}
	if err := o.checkChildEnv(); err != nil {
		return err
	}
	if err := o.checkTarget(set); err != nil {
		return err
	}
	if o.Resources, err = o.pickResources(fv.resources); err != nil {
		return err
	}
	if err := o.pickModes(fv.modes, fv.modeOrder); err != nil {
		return err
	}
	if err := o.checkEvents(); err != nil {
		return err
	}
	return o.checkControllerRuntimeChild()
}

// parseSizes reads --sizes: a scale run starts at its smallest size.
func (o *runOptions) parseSizes(set map[string]bool, list string) error {
	var err error
	if o.Sizes, err = parseSizes(list); err != nil {
		return err
	}
	if len(o.Sizes) > 0 {
		if set["pods"] {
			return errors.New("--sizes sets the Pod counts: leave --pods out")
		}
		if o.onCluster && !o.Seed {
			return errors.New("--sizes seeds a dataset up to the largest size: on a cluster it needs --seed")
		}
		o.Spec.Pods = o.Sizes[0]
	}
	return nil
}

// applyDataset applies --dataset: mixed fills in every count the flags left
// out and caches the kinds together.
func (o *runOptions) applyDataset(set map[string]bool, kind string) error {
	s := &o.Spec
	switch kind {
	case "standard":
	case "mixed":
		m := dataset.Mixed(s.Namespace, s.Pods)
		s.Name = m.Name
		for name, p := range map[string]struct {
			to   *int
			from int
		}{
			"configmaps": {&s.ConfigMaps, m.ConfigMaps}, "configmap-bytes": {&s.ConfigMapBytes, m.ConfigMapBytes},
			"secrets": {&s.Secrets, m.Secrets}, "secret-bytes": {&s.SecretBytes, m.SecretBytes},
			"nodes": {&s.Nodes, m.Nodes}, "widgets": {&s.Widgets, m.Widgets}, "widget-bytes": {&s.WidgetBytes, m.WidgetBytes},
		} {
			if !set[name] {
				*p.to = p.from
			}
		}
		if !set["together"] {
			o.Together = true
		}
		if o.onCluster && !set["nodes"] {
			s.Nodes = 0 // see --nodes
		}
	default:
		return fmt.Errorf("--dataset must be standard or mixed, got %q", kind)
	}
	return nil
}

// checkChildEnv checks --gogc and --gomemlimit, which the children get.
func (o *runOptions) checkChildEnv() error {
	if o.GOGC != "" && o.GOGC != "off" {
		if n, err := strconv.Atoi(o.GOGC); err != nil || n < 0 {
			return fmt.Errorf("--gogc must be a non-negative integer or off, got %q", o.GOGC)
		}
	}
	if o.ServerGOGC != "" && o.ServerGOGC != "off" {
		if n, err := strconv.Atoi(o.ServerGOGC); err != nil || n < 0 {
			return fmt.Errorf("--apiserver-gogc must be a non-negative integer or off, got %q", o.ServerGOGC)
		}
	}
	if o.GOMEMLIMIT != "" && !memLimit.MatchString(o.GOMEMLIMIT) {
		return fmt.Errorf("--gomemlimit must be a byte count with an optional unit (B, KiB, MiB, GiB, TiB) or off, got %q", o.GOMEMLIMIT)
	}
	return nil
}

// checkTarget checks the flags that apply to the local server only, or to a
// cluster only; a cluster is only read unless --seed.
func (o *runOptions) checkTarget(set map[string]bool) error {
	if !o.onCluster {
		if o.Seed {
			return errors.New("--seed needs a cluster (--kubeconfig or --context): the local server is always seeded")
		}
		if o.ServerPID != 0 {
			return errors.New("--server-pid needs a cluster (--kubeconfig or --context): the local server's process is known")
		}
		if o.cluster.all {
			return errors.New("--all-namespaces reads a cluster (--kubeconfig or --context): the local server's dataset is in one namespace")
		}
		return nil
	}
	if o.KeepServer {
		return errors.New("--keep-server applies to the local server, not to a cluster")
	}
	if len(o.ServerArgs) > 0 {
		return errors.New("--apiserver-args applies to the local server, not to a cluster")
	}
	if o.ServerGOGC != "" {
		return errors.New("--apiserver-gogc applies to the local server, not to a cluster")
	}
	if o.Spec.Nodes > 0 {
		return errors.New("--nodes writes Node objects, which a real cluster's scheduler and node controller would act on: the local server only")
	}
	if o.ServerPID < 0 {
		return fmt.Errorf("--server-pid must be a process id, got %d", o.ServerPID)
	}
	if o.Seed {
		if o.cluster.all {
			return errors.New("--all-namespaces reads a cluster as it is: --seed seeds one namespace of its own")
		}
		return nil
	}
	for _, f := range []string{"pods", "pod-env", "pod-shape", "configmaps", "configmap-bytes", "secrets", "secret-bytes", "widgets", "widget-bytes", "dataset"} {
		if set[f] {
			return fmt.Errorf("--%s seeds objects: on a cluster it needs --seed (runs on a cluster are read-only otherwise)", f)
		}
	}
	if slices.ContainsFunc(o.Plan.Churn, func(c float64) bool { return c > 0 }) {
		return errors.New("--churn writes to the cluster: it needs --seed (runs on a cluster are read-only otherwise)")
	}
	if o.Plan.Events != nil {
		return errors.New("--events writes to the cluster: with --kubeconfig it needs --seed (runs on a cluster are read-only otherwise)")
	}
	return nil
}

// pickModes selects --modes in the --mode-order, keeping with --together
// those that can cache every resource at once, and checks that every resource
// has a mode.
func (o *runOptions) pickModes(list, order string) error {
	var err error
	switch order {
	case "list":
		o.Modes, err = bench.Select(list)
	case "given":
		if strings.TrimSpace(list) == "" || strings.TrimSpace(list) == "all" {
			return errors.New("--mode-order given needs --modes to name the modes in the order to run them")
		}
		o.Modes, err = bench.SelectAsGiven(list)
	default:
		return fmt.Errorf("--mode-order takes list or given, got %q", order)
	}
	if err != nil {
		return err
	}
	if o.Together {
		var can []bench.Mode
		for _, m := range o.Modes {
			if canCacheAll(m, o.Resources) {
				can = append(can, m)
			}
		}
		if len(can) == 0 {
			return errors.New("none of the selected modes can cache all of --resources together")
		}
		o.Modes = can
		return nil
	}
	for _, gvr := range o.Resources {
		if len(bench.ModesFor(o.Modes, gvr)) == 0 {
			return fmt.Errorf("none of the selected modes can cache %s", gvr.Resource)
		}
	}
	return nil
}

// checkControllerRuntimeChild checks --controller-runtime-child: a program,
// for selected controller-runtime modes.
func (o *runOptions) checkControllerRuntimeChild() error {
	if o.ControllerRuntimeChild == "" {
		return nil
	}
	if !slices.ContainsFunc(o.Modes, func(m bench.Mode) bool { return m.Program == bench.ControllerRuntime }) {
		return errors.New("--controller-runtime-child is for the controller-runtime modes, and --modes selects none")
	}
	if fi, err := os.Stat(o.ControllerRuntimeChild); err != nil {
		return fmt.Errorf("--controller-runtime-child: %w", err)
	} else if fi.IsDir() {
		return fmt.Errorf("--controller-runtime-child: %s is a directory, not the program", o.ControllerRuntimeChild)
	}
	return nil
}

// parseChurn reads --churn, or makes the default fit --relists and the target.
func (o *runOptions) parseChurn(set map[string]bool, list string) error {
	if strings.TrimSpace(list) == "" {
		if set["relists"] || (o.onCluster && !o.Seed) {
			o.Plan.Churn = make([]float64, max(0, o.Plan.Relists))
		}
		return nil
	}
	var churn []float64
	for _, f := range strings.Split(list, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v >= 0 && v <= 1) {
			return fmt.Errorf("--churn takes fractions between 0 and 1, got %q", f)
		}
		churn = append(churn, v)
	}
	if set["relists"] && o.Plan.Relists != len(churn) {
		return fmt.Errorf("--relists %d with %d --churn levels: give one level per re-list, or leave --relists out", o.Plan.Relists, len(churn))
	}
	o.Plan.Churn, o.Plan.Relists = churn, len(churn)
	return nil
}

func parseSizes(list string) ([]int, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--sizes takes positive Pod counts, got %q", f)
		}
		out = append(out, n)
	}
	sort.Ints(out)
	return slices.Compact(out), nil
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
	case o.onCluster && !o.Seed:
		names = []string{"pods"}
	default:
		for _, n := range bench.ResourceNames {
			if o.Spec.Count(bench.ResourceByName[n]) > 0 {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			return nil, errors.New("nothing to measure: every object count is 0")
		}
	}
	var out []schema.GroupVersionResource
	for _, n := range names {
		gvr, ok := bench.ResourceByName[n]
		if !ok {
			return nil, fmt.Errorf("unknown resource %q in --resources (known: %s)", n, strings.Join(bench.ResourceNames, ", "))
		}
		out = append(out, gvr)
	}
	return out, nil
}

func canCacheAll(m bench.Mode, gvrs []schema.GroupVersionResource) bool {
	for _, gvr := range gvrs {
		if !m.CanCache(gvr, true) {
			return false
		}
	}
	return true
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
