package main

import (
	"context"
	"os"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

// The test kit as another module's tests use it: one real kube-apiserver for
// the test binary, started by TestMain. The first run builds the server from
// github.com/cachetune/cachetune/tools/kubeapiserver at the version go.mod
// requires.
var srv *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.Main(m, apiserver.Options{}, &srv))
}

func TestNamespaces(t *testing.T) {
	ns := srv.NewNamespace(t)
	list, err := srv.Clientset().CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	for _, want := range []string{"default", "kube-system", ns} {
		if !slices.Contains(names, want) {
			t.Errorf("namespaces %q lack %q", names, want)
		}
	}
	t.Logf("namespaces: %q", names)
}
