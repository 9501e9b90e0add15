package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cachetune/cachetune/internal/cluster"
)

// clusterFlags are kubectl's flags for reaching a cluster, bound the way
// kubectl binds them (clientcmd.BindOverrideFlags): --kubeconfig (else
// $KUBECONFIG, else ~/.kube/config), --context, -n/--namespace, --user,
// --server, --token, --as and the others, and -A/--all-namespaces where a
// command can read every namespace. Every command that works on a cluster
// takes them.
type clusterFlags struct {
	fs     *pflag.FlagSet
	source cluster.Source
	all    bool
}

// mainClusterFlags are shown in every command's help; `cachebench options`
// lists the others.
var mainClusterFlags = []string{clientcmd.RecommendedConfigPathFlag, clientcmd.FlagContext, clientcmd.FlagNamespace, "all-namespaces"}

// localFlags do not pick a cluster: commands that start the local server
// when given no cluster still take them.
var localFlags = []string{clientcmd.FlagNamespace, "all-namespaces", clientcmd.FlagTimeout, clientcmd.FlagDisableCompression}

func newClusterFlags(allNamespaces bool) *clusterFlags {
	c := &clusterFlags{fs: pflag.NewFlagSet("cluster", pflag.ContinueOnError), source: cluster.NewSource()}
	c.fs.SortFlags = false
	c.fs.StringVar(&c.source.Rules.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "",
		"path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	clientcmd.BindOverrideFlags(c.source.Overrides, c.fs, clientcmd.RecommendedConfigOverrideFlags(""))
	c.fs.Lookup(clientcmd.FlagNamespace).Usage = "namespace to work in (default: the context's namespace, else " + cluster.DefaultNamespace + ")"
	if allNamespaces {
		c.fs.BoolVarP(&c.all, "all-namespaces", "A", false, "work in every namespace")
	}
	return c
}

// selected reports whether a flag names a cluster or a user: commands that
// measure the local server by default then work on that cluster instead.
func (c *clusterFlags) selected() bool {
	picked := false
	c.fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed && !slices.Contains(localFlags, f.Name) {
			picked = true
		}
	})
	return picked
}

// target loads the cluster the flags name.
func (c *clusterFlags) target() (cluster.Target, error) {
	return c.source.Load()
}

// namespace is -n, else the context's namespace, else cluster.DefaultNamespace;
// "" with -A.
func (c *clusterFlags) namespace() (string, error) {
	if c.all {
		if c.source.Overrides.Context.Namespace != "" {
			return "", usageError{fmt.Errorf("--namespace and --all-namespaces exclude each other")}
		}
		return "", nil
	}
	return c.source.Namespace()
}

// localNamespace is the namespace on the local server: -n, else
// cluster.DefaultNamespace (no kubeconfig is read).
func (c *clusterFlags) localNamespace() string {
	if ns := c.source.Overrides.Context.Namespace; ns != "" {
		return ns
	}
	return cluster.DefaultNamespace
}

// args returns the cluster flags that were given, to pass on to a child
// process that must reach the same cluster as this one.
func (c *clusterFlags) args() []string {
	var out []string
	c.fs.VisitAll(func(f *pflag.Flag) {
		if !f.Changed {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, "--"+f.Name+"="+v)
			}
			return
		}
		out = append(out, "--"+f.Name+"="+f.Value.String())
	})
	return out
}

// noteKubeconfigEnv tells, on stderr, that $KUBECONFIG is not what a command
// that starts the local server by default works on.
func noteKubeconfigEnv(stderr io.Writer, name string) {
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		fmt.Fprintf(stderr, "note: $KUBECONFIG is set, but 'cachebench %s' starts the local kube-apiserver unless given --kubeconfig or --context\n", name)
	}
}

// usage lists the main cluster flags and names the others.
func (c *clusterFlags) usage() string {
	main := pflag.NewFlagSet("main", pflag.ContinueOnError)
	main.SortFlags = false
	var others []string
	c.fs.VisitAll(func(f *pflag.Flag) {
		if slices.Contains(mainClusterFlags, f.Name) {
			main.AddFlag(f)
		} else {
			others = append(others, "--"+f.Name)
		}
	})
	return main.FlagUsages() + wrap("and kubectl's other connection flags: "+strings.Join(others, ", ")+
		" ('cachebench options' describes them)", "      ", 80)
}

// wrap breaks text into lines of at most width columns, each starting with
// indent.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, word := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	b.WriteString(line + "\n")
	return b.String()
}

// printClusterOptions is `cachebench options`: kubectl's cluster flags, which every
// command that works on a cluster takes.
func printClusterOptions(stdout io.Writer) {
	c := newClusterFlags(true)
	fmt.Fprintf(stdout, `The flags below reach a cluster as kubectl does, and mean what they mean for
kubectl; every command that works on a cluster (run, doctor, seed, shard) takes
them. -A applies to run and doctor, which can read every namespace.

%s`, c.fs.FlagUsages())
}

// redact replaces the values of the secret cluster flags in args (those
// clientcmd marks classified: --token, --password, the client key and
// certificate, impersonation) with "REDACTED", for a command line kept in a
// report.
func (c *clusterFlags) redact(args []string) []string {
	secret := func(arg string) (name string, ok bool) {
		name, _, _ = strings.Cut(strings.TrimLeft(arg, "-"), "=")
		f := c.fs.Lookup(name)
		return name, strings.HasPrefix(arg, "--") && f != nil && len(f.Annotations["classified"]) > 0
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		name, ok := secret(args[i])
		switch {
		case !ok:
			out = append(out, args[i])
		case strings.Contains(args[i], "="):
			out = append(out, "--"+name+"=REDACTED")
		default:
			out = append(out, args[i], "REDACTED")
			i++ // the value
		}
	}
	return out
}
