package informer

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

// srv is the package's real kube-apiserver (nil with -short).
var srv *apiserver.Server

// TestMain starts one real kube-apiserver for the tests that need it, and fails
// the package if any test leaves a goroutine behind, as client-go's
// tools/cache tests do (TestShutdown relies on it).
func TestMain(m *testing.M) {
	code := apiserver.Main(m, apiserver.Options{}, &srv)
	if code == 0 {
		if err := goleak.Find(leakcheck.Options()...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
