package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/internal/cluster"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

func runSeed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("seed", `Seeds a realistic dataset into a cluster named by a kubeconfig, or deletes it
with --clean. Objects are labelled cachetune.dev/dataset=<name>; --clean deletes
exactly those.`, stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster (required)")
	var spec dataset.Spec
	fs.StringVar(&spec.Namespace, "namespace", "cachetune-bench", "namespace to seed into (created when missing)")
	fs.StringVar(&spec.Name, "name", "standard", "dataset name, the value of the cachetune.dev/dataset label")
	datasetFlags(fs, &spec)
	fs.IntVar(&spec.Concurrency, "concurrency", dataset.Standard("").WithDefaults().Concurrency, "parallel writers")
	clean := fs.Bool("clean", false, "delete the named dataset instead of creating it")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *kubeconfig == "" {
		return usageError{errors.New("--kubeconfig is required (use 'cachebench apiserver' for a local server)")}
	}
	if spec.Pods < 0 || spec.ConfigMaps < 0 || spec.Secrets < 0 || spec.Widgets < 0 {
		return usageError{errors.New("object counts must not be negative")}
	}
	cfg, err := loadKubeconfig(*kubeconfig)
	if err != nil {
		return err
	}
	progress := dataset.ProgressPrinter(stderr)
	if *clean {
		if err := dataset.Clean(ctx, cfg, spec.Namespace, spec.Name, progress); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted dataset %q from namespace %s\n", spec.Name, spec.Namespace)
		return nil
	}
	spec.Progress = progress
	if err := dataset.Seed(ctx, cfg, spec); err != nil {
		return err
	}
	sizes, err := dataset.Measure(ctx, cfg, dataset.PodsGVR, spec.Namespace, dataset.LabelDataset+"="+spec.Name)
	if err != nil {
		return err
	}
	if sizes.Count > 0 {
		fmt.Fprintf(stdout, "seeded %d pods: mean %.1f KB JSON, %.1f KB without managedFields (managedFields %.1f KB from %.1f managers, last-applied %.1f KB), %.1f KB protobuf\n",
			sizes.Count, sizes.JSON/1000, sizes.JSONWithoutManagedFields/1000, sizes.ManagedFields/1000, sizes.Managers, sizes.LastApplied/1000, sizes.Protobuf/1000)
	}
	return nil
}

// loadKubeconfig loads a kubeconfig's current context with client-side rate
// limits raised to 500 QPS: cachebench reads and writes in bulk.
func loadKubeconfig(path string) (*rest.Config, error) {
	return cluster.Load(path, "")
}
