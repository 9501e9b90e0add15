package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/cachetune/cachetune/internal/cluster"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// apiserverReady is what `cachebench apiserver -o json` prints once the
// server is ready.
type apiserverReady struct {
	Kubeconfig string `json:"kubeconfig"`
	Host       string `json:"host"`
	PID        int    `json:"pid"`
	Namespace  string `json:"namespace"`
}

func runAPIServer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("apiserver", `Starts a real kube-apiserver with an embedded etcd on 127.0.0.1, prints the path
of its kubeconfig and keeps it running until interrupted (Ctrl-C). The kubeconfig
has two contexts: cachetune-admin (current) and cachetune-restricted (no RBAC
grants); both default to the namespace -n (cachebench), which --seed-pods
seeds, so that the other commands find the dataset there. With --build-only it
only builds (or finds) the binary and prints its path, for
CACHETUNE_KUBE_APISERVER in another module's tests. With --envtest-assets DIR
it builds controller-runtime envtest's kube-apiserver and etcd into DIR (once;
later calls reuse them) and prints DIR, for KUBEBUILDER_ASSETS.`, stdout, stderr)
	out := fs.withOutput("table", "json")
	buildOnly := fs.Bool("build-only", false, "build the server binary if needed, print its path and exit")
	envtest := fs.String("envtest-assets", "", "build envtest's kube-apiserver and etcd into this directory if needed, print it and exit")
	extra := fs.String("apiserver-args", "", "extra kube-apiserver flags, space separated (e.g. --feature-gates=WatchList=false)")
	pods := fs.Int("seed-pods", 0, "seed this many realistic Pods into namespace -n")
	ns := fs.StringP("namespace", "n", cluster.DefaultNamespace, "namespace of the kubeconfig's contexts, and of --seed-pods")
	if err := fs.parse(args); err != nil {
		return err
	}
	if *envtest != "" {
		dir, err := apiserver.EnvtestAssets(ctx, *envtest, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "envtest assets ready: export KUBEBUILDER_ASSETS=%s\n", dir)
		return printPath(stdout, out.value, "envtestAssets", dir)
	}
	if *buildOnly {
		bin, err := apiserver.Binary(ctx, stderr)
		if err != nil {
			return err
		}
		return printPath(stdout, out.value, "binary", bin)
	}
	srv, err := apiserver.Start(ctx, apiserver.Options{ExtraArgs: strings.Fields(*extra), Progress: stderr})
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }() // for the early returns: the last line returns Stop's error
	if err := setKubeconfigNamespace(srv.Kubeconfig, *ns); err != nil {
		return err
	}
	if *pods > 0 {
		spec := dataset.Spec{Name: "standard", Namespace: *ns, Pods: *pods, Progress: dataset.ProgressPrinter(stderr)}
		if err := dataset.Seed(ctx, srv.Config, spec); err != nil {
			return err
		}
	}
	if out.value == "json" {
		if err := writeJSON(stdout, apiserverReady{Kubeconfig: srv.Kubeconfig, Host: srv.Host, PID: srv.PID, Namespace: *ns}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "export KUBECONFIG=%s\n", srv.Kubeconfig)
	}
	fmt.Fprintln(stderr, "kube-apiserver running; press Ctrl-C to stop it")
	<-ctx.Done()
	return srv.Stop()
}

// printPath prints a path alone (for $(...)), or as JSON under key.
func printPath(stdout io.Writer, output, key, path string) error {
	if output == "json" {
		return writeJSON(stdout, map[string]string{key: path})
	}
	_, err := fmt.Fprintln(stdout, path)
	return err
}

// setKubeconfigNamespace makes ns the namespace of every context of the
// kubeconfig at path.
func setKubeconfigNamespace(path, ns string) error {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return err
	}
	for _, c := range cfg.Contexts {
		c.Namespace = ns
	}
	return clientcmd.WriteToFile(*cfg, path)
}
