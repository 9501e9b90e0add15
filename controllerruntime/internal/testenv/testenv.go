// Package testenv starts controller-runtime's envtest for this module's tests
// from binaries built locally, never downloaded: KUBEBUILDER_ASSETS when it is
// set (make test sets it), otherwise the assets pkg/testkit/apiserver builds into
// the checkout's bin/envtest (about 8 minutes the first time on 2 cores, then
// cached).
package testenv

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

// AssetsDir returns the directory holding envtest's kube-apiserver and etcd.
func AssetsDir(ctx context.Context) (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	dir, err := apiserver.EnvtestAssets(ctx, "", os.Stderr)
	if err != nil {
		return "", fmt.Errorf("build envtest assets: %w", err)
	}
	return dir, nil
}

// Start starts env (a zero Environment is fine) on the local assets and
// returns its config. Stop it with env.Stop.
func Start(ctx context.Context, env *envtest.Environment) (*rest.Config, error) {
	dir, err := AssetsDir(ctx)
	if err != nil {
		return nil, err
	}
	if env.BinaryAssetsDirectory == "" {
		env.BinaryAssetsDirectory = dir
	}
	return env.Start()
}
