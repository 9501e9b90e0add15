// Package apiserver starts a real kube-apiserver, backed by an embedded etcd,
// on 127.0.0.1 for tests and benchmarks: like envtest, but with nothing to
// download. It is part of cachetune's test kit (pkg/testkit), beside faults
// and dataset. The server is built from Go modules (k8s.io/kubernetes v1.37.2)
// by the nested module tools/kubeapiserver, so the library module itself never
// imports k8s.io/kubernetes.
//
// The guide that uses it: README.md, "A local kube-apiserver".
//
// One server per test binary is the intended use; give each test its own namespace:
//
//	var srv *apiserver.Server
//
//	func TestMain(m *testing.M) {
//		os.Exit(apiserver.Main(m, apiserver.Options{}, &srv))
//	}
//
//	func TestSomething(t *testing.T) {
//		ns := srv.NewNamespace(t)
//		cs := kubernetes.NewForConfigOrDie(srv.Config)
//		...
//	}
//
// # Where the binary comes from
//
// Binary finds the server in this order:
//
//  1. the file the CACHETUNE_KUBE_APISERVER environment variable (EnvBinary)
//     names; nothing is looked up or built;
//  2. bin/cachetune-kube-apiserver in the cachetune checkout that holds the
//     working directory, built from tools/kubeapiserver when missing or older
//     than its sources (about 8 minutes on 2 cores the first time; later runs
//     reuse it and a server is ready in a few seconds).
//
// Inside a cachetune checkout nothing needs setting. From another module (a
// controller's own tests that import this package) there are no server
// sources to build: the module proxy does not ship nested modules with the
// root one, and tools/kubeapiserver needs the replace directives that
// k8s.io/kubernetes requires, which go install refuses. Build the binary once
// in a checkout of cachetune at the version your go.mod requires, and point
// the variable at it:
//
//	# in the cachetune checkout: builds (or finds) the binary, prints its path
//	export CACHETUNE_KUBE_APISERVER=$(go run ./cmd/cachebench apiserver --build-only)
//	# then, in your module
//	go test ./...
//
// # envtest
//
// For controller-runtime projects, EnvtestAssets builds separate kube-apiserver
// and etcd binaries from the same module into a directory that KUBEBUILDER_ASSETS
// can point at, so that an unchanged envtest.Environment starts them
// (`cachebench apiserver --envtest-assets DIR` does it from the command line).
//
// # Identities
//
// The kubeconfig holds two identities: AdminUser (system:masters) and
// RestrictedUser (no role bindings), for tests of 403 handling.
package apiserver
