// Command cachebench-cr measures cachebench's controller-runtime modes
// (controller-runtime/*), one mode per process: `cachebench run` builds it and
// starts it as `cachebench-cr child` for each of those modes, as it starts
// `cachebench child` for the others, and they speak the same protocol
// (internal/bench's ServeChild). It lives in the controllerruntime module so
// that cachebench's own module never requires controller-runtime. It is not
// meant to be run by hand.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cachetune/cachetune/internal/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run serves one mode for the parent on stdin and stdout; logs go to stderr,
// which the parent keeps as the mode's log.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 || args[0] != "child" {
		fmt.Fprintln(stderr, "usage: cachebench-cr child\n\nMeasures one controller-runtime mode for 'cachebench run', which builds and starts it; not for direct use.")
		return 2
	}
	// Several managers log at once when a mode caches several resources: the
	// lock keeps their lines whole on any writer.
	ctrl.SetLogger(zap.New(zap.WriteTo(zapcore.Lock(zapcore.AddSync(stderr)))))
	if err := implementModes(); err != nil {
		fmt.Fprintln(stderr, "cachebench-cr:", err)
		return 1
	}
	if err := bench.ServeChild(ctx, stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "cachebench-cr:", err)
		return 1
	}
	return 0
}
