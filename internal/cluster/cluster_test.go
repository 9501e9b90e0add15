package cluster

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestPermissionText(t *testing.T) {
	for _, tc := range []struct {
		p          Permission
		text, canI string
	}{
		{Allow("", "pods", "shop", "list")[0], "list pods in namespace shop", "kubectl auth can-i list pods -n shop"},
		{Allow("coordination.k8s.io", "leases", "", "watch")[0], "watch leases.coordination.k8s.io", "kubectl auth can-i watch leases.coordination.k8s.io -A"},
		{Permission{Verb: "patch", Resource: "pods", Subresource: "status", Namespace: "a"}, "patch pods/status in namespace a", "kubectl auth can-i patch pods --subresource status -n a"},
	} {
		if got := tc.p.String(); got != tc.text {
			t.Errorf("String() = %q, want %q", got, tc.text)
		}
		if got := tc.p.canI(); got != tc.canI {
			t.Errorf("canI() = %q, want %q", got, tc.canI)
		}
	}
}

// TestNoKubeconfig checks the message when kubectl's rules find nothing: it
// names the three ways to give one, not clientcmd's KUBERNETES_MASTER.
func TestNoKubeconfig(t *testing.T) {
	// The default rules with a home of the test's own: nothing in
	// $KUBECONFIG, no ~/.kube/config.
	s := NewSource()
	s.Rules.Precedence = []string{filepath.Join(t.TempDir(), ".kube", "config")}
	_, err := s.Load()
	if err == nil || !strings.Contains(err.Error(), "no kubeconfig: give --kubeconfig, set $KUBECONFIG or write") {
		t.Errorf("Load without a kubeconfig: %v", err)
	}
}
