package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/testapiserver"
)

var srv *testapiserver.Server

func TestMain(m *testing.M) {
	// `cachebench run` re-executes its own binary as `cachebench child` for
	// each mode; in these tests that binary is the test binary.
	if len(os.Args) > 1 && os.Args[1] == "child" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(testapiserver.Main(m, testapiserver.Options{}, &srv))
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
		{[]string{"run", "--resources", "deployments"}, `unknown resource "deployments"`},
		{[]string{"run", "--resources", "widgets", "--modes", "client-go/typed/stream"}, "none of the selected modes can cache widgets"},
		{[]string{"run", "--gogc", "fast"}, "--gogc must be"},
		{[]string{"run", "--gomemlimit", "1 GB"}, "--gomemlimit must be"},
		{[]string{"run", "--seed"}, "--seed needs --kubeconfig"},
		{[]string{"run", "--kubeconfig", "k", "--pods", "5"}, "--pods seeds objects"},
		{[]string{"run", "--kubeconfig", "k", "--keep-server"}, "--keep-server applies to the local server"},
		{[]string{"run", "--pods", "0"}, "nothing to measure"},
		{[]string{"run", "extra"}, `unexpected argument "extra"`},
	} {
		code, _, stderr := cachebench(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
		if first := strings.SplitN(stderr, "\n", 2)[0]; !strings.Contains(first, tc.want) {
			t.Errorf("%v: the error is not on the first line: %q", tc.args, stderr)
		}
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
		{"unreachable", []string{"--kubeconfig", kubeconfigFor(t, testapiserver.AdminUser, "https://127.0.0.1:1")}, "cannot reach the cluster at https://127.0.0.1:1"},
		{"forbidden", []string{"--kubeconfig", kubeconfigFor(t, testapiserver.RestrictedUser, "")}, "forbidden: cannot list pods in all namespaces"},
		{"seed into an existing namespace", []string{"--kubeconfig", kubeconfigFor(t, testapiserver.AdminUser, ""), "--seed", "--namespace", existing}, "namespace " + existing + " exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--out", t.TempDir()}, tc.args...)
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

// TestRunEndToEnd runs `cachebench run` against the local server with a
// seeded namespace of its own, 300 Pods and two modes: one streaming, one
// LIST. Its children are this test binary.
func TestRunEndToEnd(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver")
	}
	leakcheck.Check(t)
	out := t.TempDir()
	jsonPath, htmlPath := filepath.Join(out, "r.json"), filepath.Join(out, "r.html")
	code, stdout, stderr := cachebench(t, "run",
		"--kubeconfig", kubeconfigFor(t, testapiserver.AdminUser, ""), "--seed", "--pods", "300",
		"--modes", "client-go/typed/stream,client-go/metadata/list",
		"--idle", "500ms", "--settle", "500ms", "--out", out, "--json", jsonPath, "--html", htmlPath)
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
	}
	if len(r.Results) != 2 {
		t.Fatalf("%d results, want 2", len(r.Results))
	}
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
		for _, rl := range res.Relists {
			if rl.Error != "" || rl.WatchesEnded == 0 || rl.Updates < 300 {
				t.Errorf("%s re-list %d: error %q, %d watches ended, %d updates", res.Mode, rl.Index, rl.Error, rl.WatchesEnded, rl.Updates)
			}
		}
		if len(res.Relists) != 2 {
			t.Errorf("%s: %d re-lists, want 2", res.Mode, len(res.Relists))
		}
		if res.BytesReceived < 300*5_000 {
			t.Errorf("%s: received %d bytes, less than 300 Pods' worth", res.Mode, res.BytesReceived)
		}
	}
	for _, want := range []string{"client-go/typed/stream", "streaming 3", "client-go/metadata/list", "LIST 3", "KB per object"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the table does not show %q", want)
		}
	}
	if html, err := os.ReadFile(htmlPath); err != nil || !strings.Contains(string(html), "<svg") {
		t.Errorf("HTML report: %v, or no chart in it", err)
	}
	for _, p := range []string{"cachebench.json", "cachebench.html"} {
		if _, err := os.Stat(filepath.Join(out, p)); err != nil {
			t.Error(err)
		}
	}
	// --seed cleans up after itself.
	pods, err := srv.Clientset().CoreV1().Pods(r.Datasets[0].Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("after the run: %v, %d pods left in %s", err, len(pods.Items), r.Datasets[0].Namespace)
	}
}
