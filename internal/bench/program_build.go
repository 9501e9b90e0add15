package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
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

// checkoutWith walks up from the working directory to the directory holding
// the nested module dir.
func checkoutWith(dir string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, dir, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no %s/go.mod above %s: run cachebench inside a cachetune checkout, or build the program there and name it with its flag (--controller-runtime-child)", dir, wd)
		}
	}
}
