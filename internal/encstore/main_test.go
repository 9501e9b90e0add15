package encstore_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/cachetune/cachetune/internal/leakcheck"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, leakcheck.Options()...)
}
