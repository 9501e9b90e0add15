// Command cachebench measures what Kubernetes informer caches cost, mode by mode,
// on a real kube-apiserver: heap per object, re-list spikes and Go scheduler
// latency. Run "cachebench help" for the commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
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
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, new(usageError)):
			fmt.Fprintf(stderr, "cachebench %s: %v\nRun 'cachebench %s --help' for usage.\n", c.name, err, c.name)
			return 2
		default:
			fmt.Fprintf(stderr, "cachebench %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "cachebench: unknown command %q\nRun 'cachebench help' for the commands.\n", args[0])
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `cachebench measures what Kubernetes informer caches cost, mode by mode, on a
real kube-apiserver: heap per object, re-list spikes and Go scheduler latency.

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
Run 'cachebench <command> --help' for a command's flags.
`)
}

// newFlagSet returns a flag set whose errors are returned, not printed and exited.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("cachebench "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: cachebench %s [flags]\n\n%s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and turns flag errors into usage errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}
