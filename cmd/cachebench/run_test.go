package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

var srv *apiserver.Server

func TestMain(m *testing.M) {
	// `cachebench run` re-executes its own binary as `cachebench child` for
	// each mode, and `cachebench shard` as `cachebench shard-replica` for each
	// replica; in these tests that binary is the test binary.
	if len(os.Args) > 1 && (os.Args[1] == "child" || os.Args[1] == "shard-replica") {
		main()
	}
	os.Exit(testMain(m))
}

// testMain starts the package's server trusting a CA of the tests' own for
// client certificates (testCA), besides its static tokens.
func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cachebench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if testCA, err = newClientCA(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return apiserver.Main(m, apiserver.Options{ExtraArgs: []string{"--client-ca-file=" + testCA.file}}, &srv)
}

// cachebench runs the command line in-process and returns its exit code,
// stdout and stderr.
func cachebench(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestRunFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--pods", "-1"}, "--pods must not be negative"},
		{[]string{"run", "--relists", "-2"}, "re-lists must not be negative"},
		{[]string{"run", "--modes", "nope*"}, `no mode matches "nope*"`},
		{[]string{"run", "--mode-order", "random"}, `--mode-order takes list or given, got "random"`},
		{[]string{"run", "--mode-order", "given"}, "--mode-order given needs --modes"},
		{[]string{"run", "--resources", "deployments"}, `unknown resource "deployments"`},
		{[]string{"run", "--resources", "widgets", "--modes", "client-go/typed/stream"}, "none of the selected modes can cache widgets"},
		{[]string{"run", "--gogc", "fast"}, "--gogc must be"},
		{[]string{"run", "--gomemlimit", "1 GB"}, "--gomemlimit must be"},
		{[]string{"run", "--apiserver-gogc", "-5"}, "--apiserver-gogc must be"},
		{[]string{"run", "--kubeconfig", "k", "--apiserver-gogc", "100"}, "--apiserver-gogc applies to the local server"},
		{[]string{"run", "--seed"}, "--seed needs a cluster"},
		{[]string{"run", "-A"}, "--all-namespaces reads a cluster"},
		{[]string{"run", "--kubeconfig", "k", "--seed", "-A"}, "--seed seeds one namespace of its own"},
		{[]string{"run", "--out", "a", "--out-dir", "b"}, "--out is the old spelling of --out-dir"},
		{[]string{"run", "-o", "yaml"}, `--output must be table or json, got "yaml"`},
		{[]string{"run", "--kubeconfig", "k", "--pods", "5"}, "--pods seeds objects"},
		{[]string{"run", "--kubeconfig", "k", "--keep-server"}, "--keep-server applies to the local server"},
		{[]string{"run", "--kubeconfig", "k", "--apiserver-args", "--watch-cache=false"}, "--apiserver-args applies to the local server"},
		{[]string{"run", "--pods", "0"}, "nothing to measure"},
		{[]string{"run", "extra"}, `unexpected argument "extra"`},
		{[]string{"run", "--churn", "0,2"}, "--churn takes fractions between 0 and 1"},
		{[]string{"run", "--churn", "some"}, "--churn takes fractions between 0 and 1"},
		{[]string{"run", "--relists", "3", "--churn", "0,0.1"}, "--relists 3 with 2 --churn levels"},
		{[]string{"run", "--kubeconfig", "k", "--churn", "0,0.1"}, "--churn writes to the cluster"},
		{[]string{"run", "--kubeconfig", "k", "--seed", "--nodes", "3"}, "--nodes writes Node objects"},
		{[]string{"run", "--sizes", "100,0"}, "--sizes takes positive Pod counts"},
		{[]string{"run", "--sizes", "100,200", "--pods", "5"}, "--sizes sets the Pod counts"},
		{[]string{"run", "--kubeconfig", "k", "--sizes", "100"}, "--sizes seeds a dataset"},
		{[]string{"run", "--pod-shape", "square"}, `unknown pod shape "square"`},
		{[]string{"run", "--dataset", "huge"}, "--dataset must be standard or mixed"},
		{[]string{"run", "--server-pid", "12"}, "--server-pid needs a cluster"},
		{[]string{"run", "--context", "c", "--pods", "5"}, "--pods seeds objects: on a cluster it needs --seed"},
		{[]string{"run", "--controller-runtime-child", "cachebench-cr"}, "--controller-runtime-child is for the controller-runtime modes, and --modes selects none"},
		{[]string{"run", "--modes", "controller-runtime/*", "--controller-runtime-child", "no/such/cachebench-cr"}, "--controller-runtime-child: stat no/such/cachebench-cr"},
		{[]string{"run", "--modes", "controller-runtime/default/stream", "--controller-runtime-child", "."}, "--controller-runtime-child: . is a directory"},
		{[]string{"run", "--resources", "pods,widgets", "--together", "--modes", "client-go/metadata*/stream,leanstore/metadata-lean/stream"}, ""},
	} {
		if tc.want == "" {
			continue // valid: checked by TestRunFlagsValid
		}
		code, _, stderr := cachebench(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
		// After the warnings of deprecated flags, if any.
		rest := stderr
		for strings.HasPrefix(rest, "Flag --") {
			_, rest, _ = strings.Cut(rest, "\n")
		}
		if first := strings.SplitN(rest, "\n", 2)[0]; !strings.Contains(first, tc.want) {
			t.Errorf("%v: the error is not on the first line: %q", tc.args, stderr)
		}
	}
}

// modeNames joins the modes' names with commas.
func modeNames(ms []bench.Mode) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return strings.Join(out, ",")
}

// TestRunFlagsValid checks what valid flags make of the plan and the jobs.
func TestRunFlagsValid(t *testing.T) {
	parse := func(args ...string) runOptions {
		t.Helper()
		o, _, err := parseRunFlags(args, io.Discard, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return o
	}
	if o := parse(); !slices.Equal(o.Plan.Churn, []float64{0, 0.1}) || o.Plan.Relists != 2 {
		t.Errorf("default churn %v over %d re-lists, want 0, 0.1 over 2", o.Plan.Churn, o.Plan.Relists)
	}
	if o := parse("--relists", "3"); !slices.Equal(o.Plan.Churn, []float64{0, 0, 0}) {
		t.Errorf("--relists 3 gives churn %v, want three re-lists without changes", o.Plan.Churn)
	}
	if o := parse("--churn", "0,0.1,1"); o.Plan.Relists != 3 {
		t.Errorf("--churn 0,0.1,1 gives %d re-lists", o.Plan.Relists)
	}
	if o := parse("--kubeconfig", "k"); slices.ContainsFunc(o.Plan.Churn, func(c float64) bool { return c > 0 }) {
		t.Errorf("a read-only cluster run changes objects: churn %v", o.Plan.Churn)
	}
	m := parse("--dataset", "mixed", "--pods", "1000", "--namespace", "ns", "--modes", "client-go/typed-strip-mf-la/stream,client-go/metadata/stream,leanstore/*/stream")
	if !m.Together || m.Spec.ConfigMaps != 200 || m.Spec.Nodes != 10 || len(m.Resources) != 5 {
		t.Errorf("--dataset mixed: together %v, spec %+v, %d resources", m.Together, m.Spec, len(m.Resources))
	}
	if jobs := m.Jobs(); len(jobs) != len(m.Modes) || len(jobs[0].Resources) != 5 {
		t.Errorf("--dataset mixed: %d jobs for %d modes, %d resources in the first", len(jobs), len(m.Modes), len(jobs[0].Resources))
	}
	for _, j := range m.Jobs() {
		for _, r := range j.Resources {
			if (r.Namespace == "") != (r.Resource == "nodes") {
				t.Errorf("%s: %s in namespace %q", j.Mode.Name, r.Resource, r.Namespace)
			}
		}
	}
	given := "leanstore/typed-strip-mf-la/stream,client-go/typed-strip-mf-la/stream,leanstore/metadata-lean/stream,client-go/metadata-strip-mf/stream"
	if o := parse("--modes", given, "--mode-order", "given"); modeNames(o.Modes) != given {
		t.Errorf("--mode-order given: %s, want %s", modeNames(o.Modes), given)
	}
	if o := parse("--modes", given); modeNames(o.Modes) != "client-go/typed-strip-mf-la/stream,client-go/metadata-strip-mf/stream,leanstore/typed-strip-mf-la/stream,leanstore/metadata-lean/stream" {
		t.Errorf("--modes without --mode-order: %s, want the list's order", modeNames(o.Modes))
	}
	if o := parse("--sizes", "30000,1000,10000,1000"); !slices.Equal(o.Sizes, []int{1000, 10000, 30000}) || o.Spec.Pods != 1000 {
		t.Errorf("--sizes: %v, first %d pods", o.Sizes, o.Spec.Pods)
	}
	if o := parse("--apiserver-args", "--watch-cache=false  --v=2"); !slices.Equal(o.ServerArgs, []string{"--watch-cache=false", "--v=2"}) {
		t.Errorf("--apiserver-args: %q", o.ServerArgs)
	}
	if o := parse("--pod-shape", "unique"); o.Spec.PodShape != dataset.PodsUnique {
		t.Errorf("--pod-shape unique: %q", o.Spec.PodShape)
	}
	// -n alone names the local server's namespace; it picks no cluster.
	if o := parse("-n", "team"); o.onCluster || o.cluster.localNamespace() != "team" {
		t.Errorf("-n team: on a cluster %v, namespace %q", o.onCluster, o.cluster.localNamespace())
	}
	if o := parse("--context", "kind-kind"); !o.onCluster {
		t.Error("--context does not pick a cluster")
	}
	// The old spelling of --out-dir still works, with a warning.
	var warning strings.Builder
	o, _, err := parseRunFlags([]string{"--out", "old"}, io.Discard, &warning)
	if err != nil || o.OutDir != "old" || !strings.Contains(warning.String(), "--out has been deprecated, use --out-dir") {
		t.Errorf("--out old: %v, out dir %q, warning %q", err, o.OutDir, warning.String())
	}
}

func TestRunListModes(t *testing.T) {
	code, stdout, _ := cachebench(t, "run", "--list-modes")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, m := range bench.Modes() {
		if !strings.Contains(stdout, m.Name) {
			t.Errorf("--list-modes does not list %s", m.Name)
		}
	}
}

// kubeconfigFor writes a copy of the test server's kubeconfig whose current
// context is ctxName, optionally pointing at another server.
func kubeconfigFor(t *testing.T, ctxName, server string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CurrentContext = ctxName
	if server != "" {
		for _, c := range cfg.Clusters {
			c.Server = server
		}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunClusterErrors(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver")
	}
	leakcheck.Check(t)
	existing := srv.NewNamespace(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unreachable", []string{"--kubeconfig", kubeconfigFor(t, apiserver.AdminUser, "https://127.0.0.1:1")}, "cannot reach the cluster at https://127.0.0.1:1"},
		{"forbidden", []string{"--kubeconfig", kubeconfigFor(t, apiserver.RestrictedUser, "")}, "forbidden: cachetune-restricted may not list pods in namespace default, watch pods in namespace default"},
		{"forbidden in every namespace", []string{"--kubeconfig", kubeconfigFor(t, apiserver.RestrictedUser, ""), "-A"}, "forbidden: cachetune-restricted may not list pods, watch pods"},
		{"seed into an existing namespace", []string{"--kubeconfig", kubeconfigFor(t, apiserver.AdminUser, ""), "--seed", "--namespace", existing}, "namespace " + existing + " exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--out-dir", t.TempDir()}, tc.args...)
			code, stdout, stderr := cachebench(t, args...)
			if code != 1 {
				t.Errorf("exit %d, want 1; stderr:\n%s", code, stderr)
			}
			if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Errorf("stderr = %q, want one line containing %q", stderr, tc.want)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
		})
	}
}

// allocatedSpace returns the bytes allocated in the allocation profile at
// path (alloc_space).
func allocatedSpace(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Errorf("no allocation profile: %v", err)
		return 0
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return 0
	}
	var total int64
	for i, st := range p.SampleType {
		if st.Type != "alloc_space" {
			continue
		}
		for _, s := range p.Sample {
			total += s.Value[i]
		}
	}
	return total
}

// TestRunEndToEnd runs `cachebench run` against the local server with a
// seeded namespace of its own, 300 Pods and two modes: one streaming, one
// LIST. Its children are this test binary.
func TestRunEndToEnd(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver")
	}
	leakcheck.Check(t)
	out := t.TempDir()
	jsonPath, htmlPath := filepath.Join(out, "cachebench.json"), filepath.Join(out, "cachebench.html")
	profiles, allocs := filepath.Join(out, "profiles"), filepath.Join(out, "allocs")
	code, stdout, stderr := cachebench(t, "run",
		"--kubeconfig", kubeconfigFor(t, apiserver.AdminUser, ""), "--seed", "--pods", "300", "--server-pid", fmt.Sprint(srv.PID),
		"--modes", "client-go/typed/stream,client-go/metadata/list,leanstore/typed-lean/list", "--cpu-profiles", profiles,
		"--alloc-profiles", allocs,
		"--idle", "500ms", "--settle", "500ms", "--out-dir", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("stderr:\n%s\nstdout:\n%s", stderr, stdout)

	f, err := os.Open(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := bench.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Datasets) != 1 || r.Datasets[0].Count != 300 || !r.Datasets[0].Seeded {
		t.Errorf("datasets = %+v, want 300 seeded pods", r.Datasets)
	}
	wantPath := map[string]bench.Requests{
		// A sync and two re-lists: three list requests of the mode's kind.
		"client-go/typed/stream":  {WatchList: 3},
		"client-go/metadata/list": {List: 3, Watch: 3},
		// Pages of 500: one page per list.
		"leanstore/typed-lean/list": {List: 3, Watch: 3},
	}
	if len(r.Results) != 3 {
		t.Fatalf("%d results, want 3", len(r.Results))
	}
	// The default churn: the second re-list follows a tenth of the Pods
	// changed, a hundredth created and deleted.
	wantChanges := []dataset.Changes{{}, {Updated: 30, Created: 3, Deleted: 3}}
	for _, res := range r.Results {
		if res.Error != "" {
			t.Errorf("%s: %s", res.Mode, res.Error)
		}
		if res.Objects != 300 {
			t.Errorf("%s: %d objects, want 300", res.Mode, res.Objects)
		}
		if res.LiveHeap == 0 || res.BytesPerObject < 2_000 || res.BytesPerObject > 200_000 {
			t.Errorf("%s: live heap %d, %.0f bytes per object: not sane for ~23 KB Pods", res.Mode, res.LiveHeap, res.BytesPerObject)
		}
		if res.InitialSync.PeakRatio < 1 || res.RelistPeakRatio() < 1 {
			t.Errorf("%s: peak ratios %.2f / %.2f, want at least 1", res.Mode, res.InitialSync.PeakRatio, res.RelistPeakRatio())
		}
		want := wantPath[res.Mode]
		// The watch count of a streaming mode is its streams; LIST modes open a
		// watch after each list.
		got := res.ListPath.Server
		if got.List != want.List || got.WatchList != want.WatchList || (want.Watch > 0 && got.Watch < want.Watch) {
			t.Errorf("%s: the server saw %+v, want %+v", res.Mode, got, want)
		}
		leanstore := strings.HasPrefix(res.Mode, "leanstore/")
		for i, rl := range res.Relists {
			ch := wantChanges[i]
			if rl.Error != "" || rl.WatchesEnded == 0 || rl.Changes != ch {
				t.Errorf("%s re-list %d: error %q, %d watches ended, changes %+v (want %+v)", res.Mode, rl.Index, rl.Error, rl.WatchesEnded, rl.Changes, ch)
			}
			// Every change is delivered; client-go adds an update for every
			// object it kept, leanstore none.
			want := bench.Events{Updates: 300 - ch.Deleted, Adds: ch.Created, Deletes: ch.Deleted}
			if leanstore {
				want.Updates = ch.Updated
			}
			if rl.Delivered != want {
				t.Errorf("%s re-list %d: delivered %+v, want %+v", res.Mode, rl.Index, rl.Delivered, want)
			}
			w := rl.Window
			if w.CPUSeconds <= 0 || w.Server == nil || w.Server.CPUSeconds <= 0 || w.Server.PeakRSS == 0 || w.Server.Storage == nil {
				t.Errorf("%s re-list %d: CPU %v s, server %+v: want the child's CPU and the server's cost", res.Mode, rl.Index, w.CPUSeconds, w.Server)
			}
		}
		s := res.InitialSync
		if s.CPUSeconds <= 0 || s.Server == nil || s.Server.CPUSeconds <= 0 || s.Server.Storage == nil {
			t.Errorf("%s: sync CPU %v s, server %+v: want the child's CPU and the server's cost", res.Mode, s.CPUSeconds, s.Server)
		} else if st := s.Server.Storage; st.CacheObjects+st.EtcdObjects+st.StreamObjects < 300 {
			t.Errorf("%s: the server read %+v for the sync of 300 pods", res.Mode, *st)
		}
		if _, err := os.Stat(filepath.Join(profiles, strings.ReplaceAll(res.Mode, "/", "_")+".pods.sync.pprof")); err != nil {
			t.Errorf("%s: no CPU profile of the sync: %v", res.Mode, err)
		}
		// The list alone brings ~23 KB of JSON or ~18 KB of protobuf per Pod.
		if got := allocatedSpace(t, filepath.Join(allocs, strings.ReplaceAll(res.Mode, "/", "_")+".pods.sync.allocs.pprof")); got < 300*10_000 {
			t.Errorf("%s: the allocation profile of the sync holds %d bytes, want at least 10 KB per Pod", res.Mode, got)
		}
		if len(res.Relists) != 2 {
			t.Errorf("%s: %d re-lists, want 2", res.Mode, len(res.Relists))
		}
		// A lister hands out the cached objects: a slice of pointers.
		if l := res.ReconcileList; l == nil || l.Error != "" || l.Objects != 300 || l.AllocatedPerObject() > 200 {
			t.Errorf("%s: reconcile list %+v, want 300 objects read through the lister without copies", res.Mode, l)
		}
		if res.BytesReceived < 300*5_000 {
			t.Errorf("%s: received %d bytes, less than 300 Pods' worth", res.Mode, res.BytesReceived)
		}
	}
	for _, want := range []string{"client-go/typed/stream", "streaming 3", "client-go/metadata/list", "LIST 3", "KB per object", "delivered upd/add/del", "30/3/3"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the table does not show %q", want)
		}
	}
	if html, err := os.ReadFile(htmlPath); err != nil || !strings.Contains(string(html), "<svg") {
		t.Errorf("HTML report: %v, or no chart in it", err)
	}
	// --seed cleans up after itself.
	pods, err := srv.Clientset().CoreV1().Pods(r.Datasets[0].Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("after the run: %v, %d pods left in %s", err, len(pods.Items), r.Datasets[0].Namespace)
	}
}

// TestRunTogetherAndScale runs a mixed dataset cached together in each mode's
// process (typed modes take the Widgets with a dynamic informer), at two
// sizes, with changes before the re-list. It writes the report with the old
// --out, --json and --html, which still work with a warning.
func TestRunTogetherAndScale(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver")
	}
	leakcheck.Check(t)
	out := t.TempDir()
	jsonPath, htmlPath := filepath.Join(out, "r.json"), filepath.Join(out, "r.html")
	code, stdout, stderr := cachebench(t, "run",
		"--kubeconfig", kubeconfigFor(t, apiserver.AdminUser, ""), "--seed", "--dataset", "mixed", "--sizes", "100,200",
		"--modes", "client-go/typed-strip-mf-la/stream,leanstore/typed-strip-mf-la/stream", "--churn", "0.5",
		"--idle", "200ms", "--settle", "300ms", "--out", out, "--json", jsonPath, "--html", htmlPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("stderr:\n%s\nstdout:\n%s", stderr, stdout)
	for _, old := range []string{"--out", "--json", "--html"} {
		if !strings.Contains(stderr, "Flag "+old+" has been deprecated") {
			t.Errorf("no deprecation warning for %s", old)
		}
	}
	f, err := os.Open(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	r, err := bench.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != 4 {
		t.Fatalf("%d results, want 2 modes at 2 sizes", len(r.Results))
	}
	for i, res := range r.Results {
		// 100 pods, 20 configmaps, 10 secrets, 5 widgets; no Nodes on a
		// cluster reached by kubeconfig.
		objects := []int{135, 135, 270, 270}[i]
		if res.Error != "" || res.Resource != "pods,configmaps,secrets,widgets" || res.Objects != objects {
			t.Errorf("%s: error %q, resources %s, %d objects; want %d", res.Mode, res.Error, res.Resource, res.Objects, objects)
		}
		if len(res.Relists) != 1 {
			t.Fatalf("%s: %d re-lists", res.Mode, len(res.Relists))
		}
		rl := res.Relists[0]
		if rl.Changes.Updated < objects/2-10 || rl.Missed() != 0 || rl.Error != "" {
			t.Errorf("%s: re-list changes %+v, delivered %+v, error %q", res.Mode, rl.Changes, rl.Delivered, rl.Error)
		}
	}
	html, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Against dataset size", "client-go and leanstore, side by side"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the HTML report has no %q", want)
		}
	}
}
