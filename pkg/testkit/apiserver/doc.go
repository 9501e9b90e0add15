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
//     working directory, or else in the one this package was compiled from (a
//     replace directive pointing at a checkout), built from tools/kubeapiserver
//     when missing or older than its sources;
//  3. from another module that requires cachetune at a version (go get), the
//     nested module github.com/cachetune/cachetune/tools/kubeapiserver at the
//     same version (it is tagged with every release), fetched with
//     `go mod download` through GOPROXY into os.UserCacheDir()/cachetune/
//     kube-apiserver/VERSION and built there, where it is the main module, so
//     that the replace directives k8s.io/kubernetes needs apply.
//
// The first build takes about 8 minutes on 2 cores; later runs reuse it, and a
// server is ready in a few seconds. Main builds before the tests run, so
// go test's -timeout does not count the build; a program calling Start
// should allow for it (Options.Progress shows what happens). Nothing needs
// setting in either case. With a vendored copy of this package there is
// nothing to build from: set the variable to a binary built elsewhere
// (`go run ./cmd/cachebench apiserver --build-only` in a checkout prints its
// path).
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
