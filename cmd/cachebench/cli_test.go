package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/internal/cluster"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

// userCommands are the commands of `cachebench help`.
func userCommands() []string {
	var names []string
	for _, c := range commands() {
		if c.summary != "" {
			names = append(names, c.name)
		}
	}
	return names
}

// TestUnknownFlagFitsInTwoLines checks every command: an unknown flag is one
// line naming it, and one line saying where the help is; a misspelt flag
// gets the one meant, a long flag given with one dash the right spelling.
func TestUnknownFlagFitsInTwoLines(t *testing.T) {
	for _, name := range append(userCommands(), "child", "shard-replica") {
		code, stdout, stderr := cachebench(t, name, "--no-such-flag")
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != 2 || len(lines) != 2 || !strings.Contains(lines[0], "unknown flag: --no-such-flag") ||
			lines[1] != "Run 'cachebench help "+name+"' for usage." {
			t.Errorf("%s --no-such-flag: exit %d, stderr:\n%s\nwant exit 2 and two lines: the flag, and the help", name, code, stderr)
		}
		if stdout != "" {
			t.Errorf("%s --no-such-flag: stdout %q, want nothing", name, stdout)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--kubconfig", "k"}, "unknown flag: --kubconfig (did you mean --kubeconfig?)"},
		{[]string{"doctor", "--namesapce", "x"}, "unknown flag: --namesapce (did you mean --namespace?)"},
		{[]string{"seed", "-pods", "5"}, "unknown shorthand flag: 'p' in -pods (long flags take two dashes: --pods)"},
		{[]string{"shard", "--zzz"}, "unknown flag: --zzz"},
	} {
		code, _, stderr := cachebench(t, tc.args...)
		if first, _, _ := strings.Cut(stderr, "\n"); code != 2 || !strings.HasSuffix(first, tc.want) {
			t.Errorf("%v: exit %d, first line %q; want exit 2 and %q", tc.args, code, first, tc.want)
		}
	}
}

// TestHelpCommand checks that `cachebench help CMD` prints that command's
// help, the same as `cachebench CMD --help`, on stdout.
func TestHelpCommand(t *testing.T) {
	for _, name := range userCommands() {
		code, stdout, stderr := cachebench(t, "help", name)
		if code != 0 || !strings.HasPrefix(stdout, "Usage: cachebench "+name+" [flags]") || stderr != "" {
			t.Errorf("help %s: exit %d, stdout starts %q, stderr %q", name, code, firstLine(stdout), stderr)
		}
		code, direct, _ := cachebench(t, name, "--help")
		if code != 0 || direct != stdout {
			t.Errorf("%s --help: exit %d, and its help differs from 'help %s'", name, code, name)
		}
	}
	_, stdout, _ := cachebench(t, "help", "run")
	for _, want := range []string{"--modes", "--out-dir", "-o, --output", "--kubeconfig", "--context", "-n, --namespace", "-A, --all-namespaces"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help run does not show %s", want)
		}
	}
	if strings.Contains(stdout, "--json") {
		t.Error("help run shows the deprecated --json")
	}
	if code, _, stderr := cachebench(t, "help", "nope"); code != 2 || !strings.Contains(stderr, `unknown command "nope"`) {
		t.Errorf("help nope: exit %d, stderr %q", code, stderr)
	}
	if code, stdout, _ := cachebench(t, "help"); code != 0 || !strings.Contains(stdout, "version") || strings.Contains(stdout, "shard-replica") {
		t.Errorf("help: exit %d, or the list of commands is wrong:\n%s", code, stdout)
	}
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// TestVersion checks both outputs of `cachebench version`.
func TestVersion(t *testing.T) {
	code, stdout, stderr := cachebench(t, "version", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	// The test binary is built from this module, as cachebench is.
	if v.Go != runtime.Version() || v.Version == "" || v.Version == "unknown" ||
		!strings.HasPrefix(v.ClientGo, "v0.") || v.Kubernetes != "v1."+strings.TrimPrefix(v.ClientGo, "v0.") {
		t.Errorf("version %+v: want the module's version, %s, and client-go with its Kubernetes release", v, runtime.Version())
	}
	code, stdout, _ = cachebench(t, "version")
	for _, want := range []string{"cachebench", v.Version, runtime.Version(), "client-go", v.ClientGo, "Kubernetes " + v.Kubernetes} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("version: exit %d, no %q in:\n%s", code, want, stdout)
		}
	}
}

// TestNamespaceDefault checks the one rule of every command: -n, else the
// context's namespace, else cachebench; -A for every namespace.
func TestNamespaceDefault(t *testing.T) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["with-namespace"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: "team"}
	cfg.Contexts["without"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "with-namespace"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kubeconfig", path}, "team"},
		{[]string{"--kubeconfig", path, "--context", "without"}, cluster.DefaultNamespace},
		{[]string{"--kubeconfig", path, "-n", "mine"}, "mine"},
		{[]string{"--kubeconfig", path, "--namespace=ns/mine"}, "mine"}, // kubectl's prefix
		{[]string{"--kubeconfig", path, "-A"}, ""},
	} {
		fs := newFlagSet("test", "", os.Stdout, os.Stderr)
		c := fs.withCluster(true)
		if err := fs.parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		got, err := c.namespace()
		if err != nil || got != tc.want {
			t.Errorf("%v: namespace %q, %v; want %q", tc.args, got, err, tc.want)
		}
	}
	// $KUBECONFIG, as kubectl reads it.
	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, path)
	fs := newFlagSet("test", "", os.Stdout, os.Stderr)
	c := fs.withCluster(false)
	if err := fs.parse([]string{"--context", "with-namespace"}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.namespace(); err != nil || got != "team" {
		t.Errorf("$KUBECONFIG: namespace %q, %v; want team", got, err)
	}
	if tgt, err := c.target(); err != nil || tgt.Config.Host != "https://127.0.0.1:1" || tgt.User != "u" {
		t.Errorf("$KUBECONFIG: target %+v, %v", tgt, err)
	}
}

// TestRedactSecretFlags checks that a command line kept in a report hides
// credentials given as flags.
func TestRedactSecretFlags(t *testing.T) {
	c := newClusterFlags(false)
	got := strings.Join(c.redact([]string{"--token=s3cret", "--pods", "5", "--password", "pw", "--context", "kind"}), " ")
	if want := "--token=REDACTED --pods 5 --password REDACTED --context kind"; got != want {
		t.Errorf("redact: %q, want %q", got, want)
	}
}

// TestReportAndAPIServerOutput checks -o json and --out-dir of the commands
// that need no cluster: report re-emits the run's JSON and writes the HTML
// report into --out-dir (and still into the deprecated --html), apiserver
// --build-only prints the binary as JSON.
func TestReportAndAPIServerOutput(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "run.json")
	r := bench.Report{Schema: bench.ReportSchema, Started: time.Now().UTC().Truncate(time.Second),
		Results: []bench.Result{{Mode: "client-go/typed/stream", Title: "client-go typed", Resource: "pods", Objects: 10, LiveHeap: 1 << 20, BytesPerObject: 100_000}}}
	f, err := os.Create(saved)
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.WriteJSON(f, r); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "out")
	code, stdout, stderr := cachebench(t, "report", saved, "-o", "json", "--out-dir", out)
	if code != 0 {
		t.Fatalf("report -o json: exit %d: %s", code, stderr)
	}
	got, err := bench.ReadJSON(strings.NewReader(stdout))
	if err != nil || len(got.Results) != 1 || got.Results[0].Mode != r.Results[0].Mode {
		t.Errorf("report -o json: %v, %+v", err, got.Results)
	}
	if _, err := os.Stat(filepath.Join(out, "cachebench.html")); err != nil {
		t.Errorf("report --out-dir: %v", err)
	}
	old := filepath.Join(dir, "old.html")
	code, stdout, stderr = cachebench(t, "report", "--html", old, saved)
	if _, err := os.Stat(old); code != 0 || err != nil || !strings.Contains(stderr, "Flag --html has been deprecated, use --out-dir") || !strings.Contains(stdout, "client-go/typed/stream") {
		t.Errorf("report --html: exit %d, %v, stderr %q, table %q", code, err, stderr, stdout)
	}

	prebuilt := filepath.Join(dir, "cachetune-kube-apiserver")
	if err := os.WriteFile(prebuilt, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(apiserver.EnvBinary, prebuilt)
	code, stdout, stderr = cachebench(t, "apiserver", "--build-only", "-o", "json")
	var built map[string]string
	if err := json.Unmarshal([]byte(stdout), &built); code != 0 || err != nil || built["binary"] != prebuilt {
		t.Errorf("apiserver --build-only -o json: exit %d, %v, stdout %q, stderr %q", code, err, stdout, stderr)
	}
}
