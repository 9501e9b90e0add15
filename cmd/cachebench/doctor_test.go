package main

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cachetune/cachetune/internal/doctor"
	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

func TestDoctorFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"doctor", "--output", "yaml"}, `--output must be table, json or markdown, got "yaml"`},
		{[]string{"doctor", "--sample", "0"}, "the sample must hold at least 1 object, got 0"},
		{[]string{"doctor", "--page-size", "0"}, "the page size must be at least 1"},
		{[]string{"doctor", "--watch", "-1s"}, "the watch duration must not be negative"},
		{[]string{"doctor", "--resources", "pods,,secrets"}, "an empty resource name"},
		{[]string{"doctor", "--local", "--kubeconfig", "k"}, "--local examines the local server"},
		{[]string{"doctor", "--watch", "soon"}, `invalid argument "soon" for "--watch" flag`},
		{[]string{"doctor", "--local", "-A"}, "--local examines the one namespace it seeds"},
		{[]string{"doctor", "-n", "a", "-A"}, "--namespace and --all-namespaces exclude each other"},
		{[]string{"doctor", "extra"}, `unexpected argument "extra"`},
	} {
		code, stdout, stderr := cachebench(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
		if first := strings.SplitN(stderr, "\n", 2)[0]; !strings.Contains(first, tc.want) {
			t.Errorf("%v: the error is not on the first line: %q", tc.args, stderr)
		}
		if stdout != "" {
			t.Errorf("%v: stdout %q, want nothing", tc.args, stdout)
		}
	}
}

func TestDoctorClusterErrors(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver")
	}
	leakcheck.Check(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unreachable", []string{"--kubeconfig", kubeconfigFor(t, apiserver.AdminUser, "https://127.0.0.1:1")}, 1, "cannot reach the cluster at https://127.0.0.1:1"},
		{"no such context", []string{"--kubeconfig", srv.Kubeconfig, "--context", "nope"}, 1, `context nope: context "nope" does not exist`},
		{"unknown resource", []string{"--kubeconfig", srv.Kubeconfig, "--resources", "pods,gadgets"}, 2, `the cluster serves no resource named "gadgets"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := cachebench(t, append([]string{"doctor"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if first := strings.SplitN(stderr, "\n", 2)[0]; !strings.Contains(first, tc.want) {
				t.Errorf("stderr = %q, want a first line containing %q", stderr, tc.want)
			}
			if tc.code == 1 && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("stderr has more than one line: %q", stderr)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
		})
	}
}

// TestDoctorEndToEnd runs `cachebench doctor` on the local server: as the
// admin with JSON output, and as the restricted identity (chosen with
// --context) with the table, which must report what it cannot read and exit 0.
func TestDoctorEndToEnd(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver")
	}
	leakcheck.Check(t)
	ns := srv.NewNamespace(t)
	for _, name := range []string{"a", "b", "c"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": strings.Repeat("v", 1000)}}
		if _, err := srv.Clientset().CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	code, stdout, stderr := cachebench(t, "doctor", "--kubeconfig", srv.Kubeconfig, "--namespace", ns, "--resources", "configmaps,pods", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	r, err := doctor.ReadJSON(strings.NewReader(stdout))
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s", err, stdout)
	}
	if len(r.Resources) != 2 || r.Resources[0].Resource != "configmaps" || r.Resources[0].Objects != 3 || r.Resources[1].Objects != 0 {
		t.Errorf("resources %+v, want configmaps with 3 objects, then pods with none", r.Resources)
	}
	if !strings.Contains(stderr, "configmaps: 3 objects") {
		t.Errorf("no progress on stderr: %q", stderr)
	}

	code, stdout, stderr = cachebench(t, "doctor", "--kubeconfig", srv.Kubeconfig, "--context", apiserver.RestrictedUser, "--namespace", ns, "--resources", "configmaps")
	if code != 0 {
		t.Fatalf("restricted: exit %d\nstderr:\n%s", code, stderr)
	}
	for _, want := range []string{"FORBIDDEN", "configmaps: forbidden: may not list configmaps in namespace " + ns, "grant list and watch on configmaps"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("restricted: the table does not say %q:\n%s", want, stdout)
		}
	}
}
