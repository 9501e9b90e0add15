// Command etcd is the etcd server (go.etcd.io/etcd/server/v3, the version that
// k8s.io/kubernetes v1.37.2 pins) as a stand-alone binary, for controller-runtime's
// envtest: envtest runs an etcd and a kube-apiserver binary found in
// KUBEBUILDER_ASSETS. Building both from this module's pinned sources means a
// machine that can reach only the Go module proxy can still run envtest.
//
// It takes etcd's own flags unchanged; see `etcd --help`.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
