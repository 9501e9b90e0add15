package apiserver

import (
	"context"
	"strings"
	"testing"
)

// TestBinaryOutsideACheckout is the case of another module's tests: no
// server sources above the working directory and no EnvBinary. The error must
// say how to get a binary, and nothing may be built.
func TestBinaryOutsideACheckout(t *testing.T) {
	t.Setenv(EnvBinary, "")
	t.Chdir(t.TempDir())
	bin, err := Binary(context.Background(), nil)
	if err == nil {
		t.Fatalf("Binary outside a checkout = %q, want an error", bin)
	}
	for _, want := range []string{EnvBinary, "cachebench apiserver --build-only"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Binary outside a checkout: %v; want it to name %q", err, want)
		}
	}
}
