// Command cachebench measures what Kubernetes informer caches cost, mode by mode,
// on a real kube-apiserver: heap per object, re-list spikes and Go scheduler
// latency. Run "cachebench help" for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
)

// command is one subcommand of cachebench.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"apiserver", "start the local kube-apiserver and keep it running (or only build it)", runAPIServer},
		{"seed", "seed a dataset into a cluster, or clean it up", runSeed},
		{"run", "measure every informer mode: heap per object, re-list peaks, scheduler latency", runRun},
		{"doctor", "examine a cluster: access, object sizes, projected cache heap per mode, detectors, fixes", runDoctor},
		{"report", "print the table of a saved run (JSON) and write its HTML report", runReport},
		{"shard", "measure sharded caches (WithShard) over replica processes: memory per shard count, failover, join", runShard},
		{"version", "print cachebench's version, and the Go and Kubernetes client versions it was built with", runVersion},
		{"options", "list kubectl's cluster flags, which every command that works on a cluster takes", runClusterOptions},
		{"child", "", runChild},                // hidden: one mode of `run`, in its own process
		{"shard-replica", "", runShardReplica}, // hidden: one replica of `shard`, in its own process
	}
}

// usageError marks errors caused by the command line: they exit with status 2.
type usageError struct{ error }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	name, rest := args[0], args[1:]
	if name == "help" {
		// `cachebench help CMD` is `cachebench CMD --help`.
		if len(rest) == 0 {
			usage(stdout)
			return 0
		}
		name, rest = rest[0], []string{"--help"}
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		err := c.run(ctx, rest, stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, pflag.ErrHelp):
			return 0
		case errors.As(err, new(usageError)):
			fmt.Fprintf(stderr, "cachebench %s: %v\nRun 'cachebench help %s' for usage.\n", c.name, err, c.name)
			return 2
		default:
			fmt.Fprintf(stderr, "cachebench %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "cachebench: unknown command %q\nRun 'cachebench help' for the commands.\n", name)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `cachebench measures what Kubernetes informer caches cost, mode by mode, on a
real kube-apiserver: heap per object, re-list peaks and Go scheduler latency.

Usage:
  cachebench <command> [flags]

Commands:
`)
	for _, c := range commands() {
		if c.summary == "" { // hidden
			continue
		}
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Flags follow kubectl's conventions: --kubeconfig, --context, -n/--namespace,
$KUBECONFIG, -o/--output, and --out-dir for the files a command writes.
Run 'cachebench help <command>' for a command's flags.
`)
}

func runClusterOptions(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("options", "Lists kubectl's cluster flags.", stdout, stderr)
	if err := fs.parse(args); err != nil {
		return err
	}
	printClusterOptions(stdout)
	return nil
}
