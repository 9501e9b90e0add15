package apiserver_test

import (
	"context"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

// Start runs a server outside of a test binary, for a benchmark or a
// demonstration; tests use Main from TestMain instead (see the package
// documentation). (Not run: the first start builds the server, for minutes.)
func ExampleStart() {
	ctx := context.Background()
	srv, err := apiserver.Start(ctx, apiserver.Options{Progress: os.Stderr})
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	defer srv.Stop()
	fmt.Println("export KUBECONFIG=" + srv.Kubeconfig)

	nss, err := srv.Clientset().CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Println("list namespaces:", err)
		return
	}
	fmt.Println(len(nss.Items), "namespaces")
}

// EnvBinary names a server built elsewhere (in a cachetune checkout,
//
//	go run ./cmd/cachebench apiserver --build-only
//
// prints its path): Binary, and so Start and Main, then use that file and
// build nothing, in this checkout or in another module. Here the test binary
// itself stands in for the server.
func ExampleBinary() {
	if old, ok := os.LookupEnv(apiserver.EnvBinary); ok {
		defer os.Setenv(apiserver.EnvBinary, old)
	} else {
		defer os.Unsetenv(apiserver.EnvBinary)
	}
	prebuilt, err := os.Executable()
	if err != nil {
		fmt.Println(err)
		return
	}
	os.Setenv(apiserver.EnvBinary, prebuilt) // export CACHETUNE_KUBE_APISERVER=...

	bin, err := apiserver.Binary(context.Background(), nil)
	fmt.Println(bin == prebuilt, err)

	os.Setenv(apiserver.EnvBinary, "/nonexistent/cachetune-kube-apiserver")
	_, err = apiserver.Binary(context.Background(), nil)
	fmt.Println(err)
	// Output:
	// true <nil>
	// CACHETUNE_KUBE_APISERVER=/nonexistent/cachetune-kube-apiserver: stat /nonexistent/cachetune-kube-apiserver: no such file or directory
}
