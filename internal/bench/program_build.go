package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/cachetune/cachetune/internal/checkout"
)

// childPrograms returns the program that measures each selected mode not
// measured by `cachebench child` (Mode.Program), by program name: the
// file given by its flag, or the program built from its nested module into
// the checkout's bin/. It builds each once per run, before anything is
// seeded; Go's build cache makes a build of unchanged sources take a few
// seconds.
func (o *runner) childPrograms(ctx context.Context, stderr io.Writer) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range o.Modes {
		p := m.Program
		if p == nil || out[p.Name] != "" {
			continue
		}
		if p == ControllerRuntime && o.ControllerRuntimeChild != "" {
			out[p.Name] = o.ControllerRuntimeChild // checked by the caller (cachebench run's flags)
			continue
		}
		bin, err := buildProgram(ctx, p, stderr)
		if err != nil {
			return nil, fmt.Errorf("mode %s: %w", m.Name, err)
		}
		out[p.Name] = bin
	}
	return out, nil
}

// buildProgram builds p with `go build` into bin/ of the cachetune checkout
// that holds the working directory.
func buildProgram(ctx context.Context, p *Program, stderr io.Writer) (string, error) {
	root, err := checkoutWith(p.Module)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "bin", p.Name)
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	fmt.Fprintf(stderr, "building %s (%s in %s/) into bin/: once per run; Go's build cache makes it quick when nothing changed\n", p.Name, p.Package, p.Module)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, p.Package)
	cmd.Dir = filepath.Join(root, p.Module)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s in %s: %w\n%s", p.Name, cmd.Dir, err, out)
	}
	fmt.Fprintf(stderr, "built %s in %s\n", bin, time.Since(start).Round(100*time.Millisecond))
	return bin, nil
}

// checkoutWith returns the root of the checkout that holds the nested module
// dir, or an error that says how to do without one.
func checkoutWith(dir string) (string, error) {
	root, err := checkout.Root(dir)
	if errors.Is(err, checkout.ErrNotFound) {
		return "", fmt.Errorf("%w: build the program in one and name it with its flag (--controller-runtime-child)", err)
	}
	return root, err
}
