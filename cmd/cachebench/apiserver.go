package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

func runAPIServer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("apiserver", `Starts a real kube-apiserver with an embedded etcd on 127.0.0.1, prints the path
of its kubeconfig and keeps it running until interrupted (Ctrl-C). The kubeconfig
has two contexts: cachetune-admin (current) and cachetune-restricted (no RBAC
grants). With --build-only it only builds (or finds) the binary and prints its
path, for CACHETUNE_KUBE_APISERVER in another module's tests. With
--envtest-assets DIR it builds controller-runtime envtest's kube-apiserver and
etcd into DIR (once; later calls reuse them) and prints DIR, for
KUBEBUILDER_ASSETS.`, stderr)
	buildOnly := fs.Bool("build-only", false, "build the server binary if needed, print its path and exit")
	envtest := fs.String("envtest-assets", "", "build envtest's kube-apiserver and etcd into this directory if needed, print it and exit")
	extra := fs.String("apiserver-args", "", "extra kube-apiserver flags, space separated (e.g. --feature-gates=WatchList=false)")
	pods := fs.Int("seed-pods", 0, "seed this many realistic Pods into namespace --namespace")
	ns := fs.String("namespace", "cachetune", "namespace for --seed-pods")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *envtest != "" {
		dir, err := apiserver.EnvtestAssets(ctx, *envtest, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "envtest assets ready: export KUBEBUILDER_ASSETS=%s\n", dir)
		fmt.Fprintln(stdout, dir)
		return nil
	}
	if *buildOnly {
		bin, err := apiserver.Binary(ctx, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, bin)
		return nil
	}
	srv, err := apiserver.Start(ctx, apiserver.Options{ExtraArgs: strings.Fields(*extra), Progress: stderr})
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }() // for the early returns: the last line returns Stop's error
	if *pods > 0 {
		spec := dataset.Spec{Name: "standard", Namespace: *ns, Pods: *pods, Progress: dataset.ProgressPrinter(stderr)}
		if err := dataset.Seed(ctx, srv.Config, spec); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "export KUBECONFIG=%s\n", srv.Kubeconfig)
	fmt.Fprintln(stderr, "kube-apiserver running; press Ctrl-C to stop it")
	<-ctx.Done()
	return srv.Stop()
}
