package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/internal/doctor"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// localDoctorSpec is the small dataset `cachebench doctor --local` seeds, in
// the namespace -n (cluster.DefaultNamespace unless given).
var localDoctorSpec = dataset.Spec{Name: "doctor", Pods: 300, ConfigMaps: 30, Secrets: 5, Widgets: 30}

func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseDoctorFlags(args, stdout, stderr)
	if err != nil {
		return err
	}
	var cfg *rest.Config
	opts := f.opts
	if f.local {
		ns := f.cluster.localNamespace()
		c, stop, err := startLocalDoctor(ctx, ns, stderr)
		if err != nil {
			return err
		}
		defer stop()
		cfg = c
		opts = append(opts, doctor.WithNamespace(ns))
		if !f.set["resources"] {
			opts = append(opts, doctor.WithResources("pods", "configmaps", "secrets", "widgets"))
		}
	} else {
		ns, err := f.cluster.namespace()
		if err != nil {
			return err
		}
		t, err := f.cluster.target()
		if err != nil {
			return err
		}
		// Reachable and the credentials accepted; what the user may read is
		// the doctor's own finding, resource by resource.
		if err := t.Check(ctx); err != nil {
			return err
		}
		cfg = t.Config
		opts = append(opts, doctor.WithNamespace(ns))
	}
	report, err := doctor.Run(ctx, cfg, opts...)
	if errors.Is(err, doctor.ErrOption) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	return f.writeReport(stdout, report)
}

// doctorFlags are the parsed flags of `cachebench doctor`.
type doctorFlags struct {
	cluster *clusterFlags
	local   bool
	output  string
	write   func(io.Writer, *doctor.Report) error
	// budget is --memory-budget in bytes, 0 when not given.
	budget    int64
	maxShards int
	opts      []doctor.Option
	// set names the flags given on the command line.
	set map[string]bool
}

func parseDoctorFlags(args []string, stdout, stderr io.Writer) (doctorFlags, error) {
	var f doctorFlags
	fs := newFlagSet("doctor", `Examines a cluster resource by resource, read-only: whether the identity may list
and watch it, object counts and sizes (JSON, protobuf, managedFields,
last-applied), the largest objects, the cache heap each informer mode would take
(projected from a decoded sample), LIST latency, objects stuck Terminating, and
with --watch reconcile loops and ping-pong. Ends with recommendations that name
the troubleshooting guide's symptom and the leanstore option that fixes it.

The cluster is found as kubectl finds it (--kubeconfig, else $KUBECONFIG, else
~/.kube/config; --context); namespaced resources are read in the namespace -n,
else the context's, else cachebench, or in every namespace with -A. It first
checks that the cluster answers and accepts the credentials. With --local it
starts the local kube-apiserver and seeds a small dataset to examine instead.
Progress goes to stderr, the report to stdout.`, stdout, stderr)
	f.cluster = fs.withCluster(true)
	out := fs.withOutput("table", "json", "markdown")
	resources := fs.String("resources", strings.Join(doctor.DefaultResources, ","), "resources to examine, comma-separated (pods, deployments.apps, widgets, ...), or all")
	sample := fs.Int("sample", 200, "objects per resource decoded to project cache sizes")
	pageSize := fs.Int64("page-size", 500, "objects per page of each LIST")
	watch := fs.Duration("watch", 0, "watch each resource this long for reconcile loops and ping-pong, e.g. 30s (default: no watch)")
	stuckAfter := fs.Duration("stuck-after", 10*time.Minute, "report objects Terminating for longer than this")
	fs.BoolVar(&f.local, "local", false, fmt.Sprintf("start the local kube-apiserver and seed %d Pods, %d ConfigMaps, %d Secrets and %d Widgets to examine",
		localDoctorSpec.Pods, localDoctorSpec.ConfigMaps, localDoctorSpec.Secrets, localDoctorSpec.Widgets))
	budgetFlag := fs.String("memory-budget", "", "memory for the cache per replica, e.g. 512Mi or 2Gi: adds the cache per replica for 1 to --max-shards shards (leanstore.WithShard) and the smallest count whose peak fits")
	fs.IntVar(&f.maxShards, "max-shards", 8, "largest shard count to project with --memory-budget")
	if err := fs.parse(args); err != nil {
		return f, err
	}
	f.output = out.value
	f.set = fs.set
	if *budgetFlag != "" {
		q, err := resource.ParseQuantity(*budgetFlag)
		if err != nil || q.Sign() <= 0 {
			return f, usageError{fmt.Errorf("--memory-budget %q: want a positive size such as 512Mi or 2Gi", *budgetFlag)}
		}
		f.budget = q.Value()
	}
	if f.maxShards < 1 {
		return f, usageError{fmt.Errorf("--max-shards must be at least 1, got %d", f.maxShards)}
	}
	f.write = map[string]func(io.Writer, *doctor.Report) error{
		"table": doctor.WriteTable, "json": doctor.WriteJSON, "markdown": doctor.WriteMarkdown,
	}[f.output]
	if f.local && f.cluster.selected() {
		return f, usageError{errors.New("--local examines the local server: leave out --kubeconfig, --context and the other cluster flags")}
	}
	if f.local && f.cluster.all {
		return f, usageError{errors.New("--local examines the one namespace it seeds: leave out --all-namespaces")}
	}
	f.opts = []doctor.Option{
		doctor.WithResources(strings.Split(*resources, ",")...),
		doctor.WithSample(*sample), doctor.WithPageSize(*pageSize), doctor.WithWatch(*watch),
		doctor.WithStuckAfter(*stuckAfter), doctor.WithProgress(stderr),
	}
	if err := doctor.Validate(f.opts...); err != nil {
		return f, usageError{err}
	}
	return f, nil
}

// writeReport writes the report, and with --memory-budget the shard plan.
func (f doctorFlags) writeReport(stdout io.Writer, report *doctor.Report) error {
	if f.budget == 0 {
		return f.write(stdout, report)
	}
	plan, err := doctor.PlanShards(report, f.budget, f.maxShards)
	if err != nil {
		return err
	}
	report.Shards = &plan
	if err := f.write(stdout, report); err != nil || f.output == "json" {
		return err
	}
	if f.output == "markdown" {
		fmt.Fprint(stdout, "\n```text")
		defer fmt.Fprintln(stdout, "```")
	}
	return doctor.WriteShardPlan(stdout, plan)
}

// startLocalDoctor starts the local server and seeds the doctor's dataset
// into namespace ns.
func startLocalDoctor(ctx context.Context, ns string, stderr io.Writer) (*rest.Config, func(), error) {
	srv, err := apiserver.Start(ctx, apiserver.Options{Progress: stderr})
	if err != nil {
		return nil, nil, err
	}
	stop := func() { _ = srv.Stop() }
	spec := localDoctorSpec
	spec.Namespace = ns
	spec.Progress = dataset.ProgressPrinter(stderr)
	fmt.Fprintf(stderr, "seeding namespace %s: %d pods, %d configmaps, %d secrets, %d widgets\n",
		spec.Namespace, spec.Pods, spec.ConfigMaps, spec.Secrets, spec.Widgets)
	if err := dataset.Seed(ctx, srv.Config, spec); err != nil {
		stop()
		return nil, nil, fmt.Errorf("seed: %w", err)
	}
	return srv.Config, stop, nil
}
