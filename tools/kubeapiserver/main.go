// Command cachetune-kube-apiserver runs a real Kubernetes API server (k8s.io/kubernetes
// v1.37.2) backed by an embedded etcd in one process, for cachetune's tests and
// benchmarks. It listens on 127.0.0.1 only, on free ports, writes a kubeconfig with an
// admin identity and a restricted identity, prints one JSON line on stdout once
// /readyz answers, and on SIGTERM or SIGINT stops the API server, then etcd, then
// removes every file it created.
//
// Usage:
//
//	cachetune-kube-apiserver [--dir DIR] [--kubeconfig FILE] [-- extra kube-apiserver flags]
//
// Flags after "--" are appended to the API server's command line and so override the
// defaults, for example: -- --feature-gates=WatchList=false
//
// It lives in its own Go module so that users of the cachetune library never inherit
// k8s.io/kubernetes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

// Ready is the JSON line printed on stdout when the server is ready.
type Ready struct {
	Host       string `json:"host"`
	Kubeconfig string `json:"kubeconfig"`
	Dir        string `json:"dir"`
	PID        int    `json:"pid"`
	// Startup is how long etcd and the API server took to become ready.
	Startup string `json:"startup"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "cachetune-kube-apiserver: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("cachetune-kube-apiserver", flag.ContinueOnError)
	dir := fs.String("dir", "", "working directory for etcd data, certificates and the kubeconfig; a temporary one is created and removed at exit when empty")
	kubeconfig := fs.String("kubeconfig", "", "where to write the kubeconfig (default DIR/kubeconfig)")
	quota := fs.Int64("etcd-quota-bytes", 8<<30, "etcd backend quota in bytes")
	watchParent := fs.Bool("exit-with-parent", true, "stop when the parent process goes away")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: cachetune-kube-apiserver [flags] [-- kube-apiserver flags]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	extra := fs.Args()

	start := time.Now()
	ownDir := *dir == ""
	if ownDir {
		d, err := os.MkdirTemp("", "cachetune-apiserver-")
		if err != nil {
			return fmt.Errorf("create working directory: %w", err)
		}
		*dir = d
		defer os.RemoveAll(d)
	} else if err := os.MkdirAll(*dir, 0o700); err != nil {
		return fmt.Errorf("create working directory: %w", err)
	}
	if *kubeconfig == "" {
		*kubeconfig = filepath.Join(*dir, "kubeconfig")
	}

	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, securePort := ports[0], ports[1], ports[2]

	etcd, err := startEtcd(filepath.Join(*dir, "etcd"), etcdClient, etcdPeer, *quota)
	if err != nil {
		return err
	}
	defer etcd.Close()

	creds, err := writeCredentials(*dir, securePort)
	if err != nil {
		return err
	}
	if err := writeKubeconfig(*kubeconfig, creds); err != nil {
		return err
	}

	// The API server's command installs its own SIGTERM/SIGINT handler: the first
	// signal cancels its context and Run returns after a graceful shutdown.
	cmd := app.NewAPIServerCommand()
	cmd.SetArgs(append(apiserverArgs(*dir, creds, etcdClient, securePort), extra...))
	apiDone := make(chan error, 1)
	go func() { apiDone <- cmd.Execute() }()

	if *watchParent {
		go exitWithParent()
	}

	readyCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := waitReady(readyCtx, creds, apiDone); err != nil {
		return err
	}
	line, _ := json.Marshal(Ready{
		Host:       creds.host,
		Kubeconfig: *kubeconfig,
		Dir:        *dir,
		PID:        os.Getpid(),
		Startup:    time.Since(start).Round(time.Millisecond).String(),
	})
	fmt.Println(string(line))

	err = <-apiDone
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("kube-apiserver: %w", err)
	}
	return nil
}

// exitWithParent sends this process a SIGTERM when its parent dies, so that a test
// binary killed by a time-out does not leave an API server behind.
func exitWithParent() {
	parent := os.Getppid()
	for range time.Tick(500 * time.Millisecond) {
		if os.Getppid() != parent {
			_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
			return
		}
	}
}
