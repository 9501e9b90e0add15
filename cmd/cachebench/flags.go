package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// flagSet is one command's command line, parsed as kubectl parses its own
// (spf13/pflag: --name value, --name=value, -n value, flags anywhere among
// the arguments): the command's flags, and kubectl's cluster flags for the
// commands that work on a cluster. Its errors are returned, never printed and
// exited; --help prints the command's help on stdout.
type flagSet struct {
	*pflag.FlagSet // the command's own flags
	name, synopsis string
	// args names the positional arguments in the usage line; with none, an
	// argument is an error.
	args       string
	positional []string
	// set names the flags given on the command line, after parse.
	set     map[string]bool
	cluster *clusterFlags
	output  *outputFlag
	stdout  io.Writer
}

func newFlagSet(name, synopsis string, stdout, stderr io.Writer) *flagSet {
	fs := pflag.NewFlagSet("cachebench "+name, pflag.ContinueOnError)
	fs.SortFlags = false
	// Deprecation warnings go to stderr; nothing else is printed by pflag
	// (Usage runs only for --help, and parse prints then).
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, name: name, synopsis: synopsis, stdout: stdout}
}

// withCluster adds kubectl's cluster flags; allNamespaces adds -A too.
func (f *flagSet) withCluster(allNamespaces bool) *clusterFlags {
	f.cluster = newClusterFlags(allNamespaces)
	return f.cluster
}

// parse parses args and turns flag errors into usage errors of one line,
// with a hint when a flag is misspelt.
func (f *flagSet) parse(args []string) error {
	all := pflag.NewFlagSet(f.FlagSet.Name(), pflag.ContinueOnError)
	all.SetOutput(f.FlagSet.Output())
	all.Usage = func() {}
	all.AddFlagSet(f.FlagSet)
	if f.cluster != nil {
		all.AddFlagSet(f.cluster.fs)
	}
	if err := all.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			f.usage(f.stdout)
			return err
		}
		return usageError{f.hint(all, err)}
	}
	if f.args == "" && all.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", all.Arg(0))}
	}
	f.positional = all.Args()
	f.set = map[string]bool{}
	all.Visit(func(fl *pflag.Flag) { f.set[fl.Name] = true })
	if f.output != nil {
		if err := f.output.check(); err != nil {
			return usageError{err}
		}
	}
	return nil
}

// hint adds to a parse error the flag that was probably meant: a misspelt
// name, or a long name given with one dash (-pods, which pflag reads as the
// shorthands -p -o -d -s).
func (f *flagSet) hint(all *pflag.FlagSet, err error) error {
	msg := err.Error()
	var names []string
	all.VisitAll(func(fl *pflag.Flag) {
		if fl.Deprecated == "" && !fl.Hidden {
			names = append(names, fl.Name)
		}
	})
	given := ""
	switch {
	case strings.HasPrefix(msg, "unknown flag: --"):
		given = strings.TrimPrefix(msg, "unknown flag: --")
	case strings.HasPrefix(msg, "unknown shorthand flag: "):
		// "unknown shorthand flag: 'p' in -pods"
		if i := strings.LastIndex(msg, " in -"); i >= 0 {
			word, _, _ := strings.Cut(msg[i+len(" in -"):], "=")
			if slices.Contains(names, word) {
				return fmt.Errorf("%s (long flags take two dashes: --%s)", msg, word)
			}
			given = word
		}
	default:
		return err
	}
	if best := closest(given, names); best != "" {
		return fmt.Errorf("%s (did you mean --%s?)", msg, best)
	}
	return err
}

// closest returns the name nearest to s within an edit distance of a third
// of its length (at least 1), or "".
func closest(s string, names []string) string {
	best, bestD := "", max(1, len(s)/3)+1
	for _, n := range names {
		if d := editDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// usage writes the command's help: the synopsis, its flags, and the cluster
// flags apart.
func (f *flagSet) usage(w io.Writer) {
	line := "Usage: cachebench " + f.name + " [flags]"
	if f.args != "" {
		line += " " + f.args
	}
	fmt.Fprintf(w, "%s\n\n%s\n", line, f.synopsis)
	if own := f.FlagUsages(); own != "" {
		fmt.Fprintf(w, "\nFlags:\n%s", own)
	}
	if f.cluster != nil {
		fmt.Fprintf(w, "\nCluster flags, as kubectl's:\n%s", f.cluster.usage())
	}
}

// outputFlag is -o/--output: the format of what a command prints on stdout.
type outputFlag struct {
	value   string
	formats []string
}

// withOutput adds -o/--output with these formats, the first the default.
func (f *flagSet) withOutput(formats ...string) *outputFlag {
	f.output = &outputFlag{formats: formats}
	f.StringVarP(&f.output.value, "output", "o", formats[0], "output format: "+orList(formats))
	return f.output
}

func (o *outputFlag) check() error {
	if !slices.Contains(o.formats, o.value) {
		return fmt.Errorf("--output must be %s, got %q", orList(o.formats), o.value)
	}
	return nil
}

// orList is "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// deprecated adds an old spelling that still works for one release, with a
// warning on stderr that names what to use instead.
func (f *flagSet) deprecated(name, instead string) {
	_ = f.MarkDeprecated(name, "use "+instead+" (it goes in the next release)")
}
