package main

import (
	"context"
	"io"
	"os"

	"github.com/cachetune/cachetune/internal/bench"
)

// runChild is the hidden `cachebench child` command: one mode measured in its
// own process, driven by `cachebench run` over stdin and stdout.
func runChild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("child", "Measures one mode for 'cachebench run', which starts it; not for direct use.", stdout, stderr)
	if err := fs.parse(args); err != nil {
		return err
	}
	return bench.ServeChild(ctx, os.Stdin, stdout)
}
