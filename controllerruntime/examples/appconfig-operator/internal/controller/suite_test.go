package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cachetune/cachetune/controllerruntime/internal/testenv"
)

var cfg *rest.Config

// TestMain starts envtest as a kubebuilder suite does, with the operator's CRDs
// from config/crd/bases, on the locally built kube-apiserver and etcd.
func TestMain(m *testing.M) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	os.Exit(func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		env := &envtest.Environment{
			CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
			ErrorIfCRDPathMissing: true,
		}
		var err error
		if cfg, err = testenv.Start(ctx, env); err != nil {
			fmt.Fprintln(os.Stderr, "start envtest:", err)
			return 1
		}
		defer func() {
			if err := env.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "stop envtest:", err)
			}
		}()
		return m.Run()
	}())
}
