// Package apiserver starts a real kube-apiserver, backed by an embedded etcd,
// on 127.0.0.1 for tests and benchmarks: like envtest, but with nothing to
// download. The server is built from Go modules (k8s.io/kubernetes v1.37.2) by the
// nested module tools/kubeapiserver, so the library module itself never imports
// k8s.io/kubernetes.
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
// The first use builds the binary (about 8 minutes on 2 cores) into the checkout's
// bin/ directory; later runs reuse it and a server is ready in a few seconds. Set
// CACHETUNE_KUBE_APISERVER to use a binary built elsewhere.
//
// For controller-runtime projects, EnvtestAssets builds separate kube-apiserver
// and etcd binaries from the same module into a directory that KUBEBUILDER_ASSETS
// can point at, so that an unchanged envtest.Environment starts them
// (`cachebench apiserver --envtest-assets DIR` does it from the command line).
//
// The kubeconfig holds two identities: AdminUser (system:masters) and
// RestrictedUser (no role bindings), for tests of 403 handling.
package apiserver
