package leakcheck

import (
	"testing"

	"go.uber.org/goleak"
)

// Options are the goleak options every cachetune test uses.
func Options() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run"),
	}
}

// Check registers a cleanup that fails t if goroutines started during the test
// are still running when it ends (goroutines that existed before are ignored).
// Call it first in the test, so that its cleanup runs last.
func Check(t testing.TB) {
	t.Helper()
	opts := append(Options(), goleak.IgnoreCurrent())
	t.Cleanup(func() {
		t.Helper()
		goleak.VerifyNone(t, opts...)
	})
}
