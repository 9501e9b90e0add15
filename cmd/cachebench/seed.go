package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// seedResult is what `cachebench seed -o json` prints.
type seedResult struct {
	Dataset   string `json:"dataset"`
	Namespace string `json:"namespace"`
	// Cleaned is set by --clean: the dataset was deleted.
	Cleaned bool `json:"cleaned,omitempty"`
	// Objects are the counts seeded, by resource.
	Objects map[string]int `json:"objects,omitempty"`
	// Pods are the seeded Pods' mean sizes, in bytes.
	Pods *dataset.Sizes `json:"podSizes,omitempty"`
}

func runSeed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("seed", `Seeds a realistic dataset into a cluster, or deletes it with --clean. The
cluster is found as kubectl finds it (--kubeconfig, else $KUBECONFIG, else
~/.kube/config; --context), the namespace is -n, else the context's, else
cachebench, and is created when missing. Objects are labelled
cachetune.dev/dataset=<name>; --clean deletes exactly those.

It first checks that the cluster answers, accepts the credentials, and lets
the user write what it seeds (or delete it, with --clean).`, stdout, stderr)
	cf := fs.withCluster(false)
	out := fs.withOutput("table", "json")
	var spec dataset.Spec
	fs.StringVar(&spec.Name, "name", "standard", "dataset name, the value of the cachetune.dev/dataset label")
	datasetFlags(fs, &spec)
	fs.IntVar(&spec.Concurrency, "concurrency", dataset.Standard("").WithDefaults().Concurrency, "parallel writers")
	clean := fs.Bool("clean", false, "delete the named dataset instead of creating it")
	if err := fs.parse(args); err != nil {
		return err
	}
	if spec.Pods < 0 || spec.ConfigMaps < 0 || spec.Secrets < 0 || spec.Widgets < 0 {
		return usageError{errors.New("object counts must not be negative")}
	}
	var err error
	if spec.Namespace, err = cf.namespace(); err != nil {
		return err
	}
	t, err := cf.target()
	if err != nil {
		return err
	}
	perms := bench.SeedPermissions(spec)
	if *clean {
		perms = bench.CleanPermissions(spec.Namespace)
	}
	if err := t.Check(ctx, perms...); err != nil {
		return err
	}
	res := seedResult{Dataset: spec.Name, Namespace: spec.Namespace}
	progress := dataset.ProgressPrinter(stderr)
	if *clean {
		if err := dataset.Clean(ctx, t.Config, spec.Namespace, spec.Name, progress); err != nil {
			return err
		}
		res.Cleaned = true
		if out.value == "json" {
			return writeJSON(stdout, res)
		}
		fmt.Fprintf(stdout, "deleted dataset %q from namespace %s\n", spec.Name, spec.Namespace)
		return nil
	}
	spec.Progress = progress
	if err := dataset.Seed(ctx, t.Config, spec); err != nil {
		return err
	}
	res.Objects = map[string]int{}
	for _, name := range bench.ResourceNames {
		if n := spec.Count(bench.ResourceByName[name]); n > 0 {
			res.Objects[name] = n
		}
	}
	sizes, err := dataset.Measure(ctx, t.Config, dataset.PodsGVR, spec.Namespace, dataset.LabelDataset+"="+spec.Name)
	if err != nil {
		return err
	}
	if sizes.Count > 0 {
		res.Pods = &sizes
	}
	if out.value == "json" {
		return writeJSON(stdout, res)
	}
	fmt.Fprintf(stdout, "seeded dataset %q into namespace %s\n", spec.Name, spec.Namespace)
	if sizes.Count > 0 {
		fmt.Fprintf(stdout, "seeded %d pods: mean %.1f KB JSON, %.1f KB without managedFields (managedFields %.1f KB from %.1f managers, last-applied %.1f KB), %.1f KB protobuf\n",
			sizes.Count, sizes.JSON/1000, sizes.JSONWithoutManagedFields/1000, sizes.ManagedFields/1000, sizes.Managers, sizes.LastApplied/1000, sizes.Protobuf/1000)
	}
	return nil
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
