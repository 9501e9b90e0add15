package informer

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/cachetune/cachetune/internal/leakcheck"
)

// TestMain fails the package if any test leaves a goroutine behind, as
// client-go's tools/cache tests do (TestShutdown relies on it).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, leakcheck.Options()...)
}
