package bench

import (
	"context"
	"fmt"
)

// Program is a child program built from a nested module of the repository: it
// measures the modes whose library the root module must not require, speaking
// the same protocol as `cachebench child` (ServeChild). The parent builds it
// once per run with `go build` (Go's build cache makes that quick when
// nothing changed) and starts it as `NAME child` for each of its modes.
type Program struct {
	// Name is the binary's file name, e.g. "cachebench-cr".
	Name string
	// Module is the nested module's directory, relative to the repository
	// root, e.g. "controllerruntime".
	Module string
	// Package is the main package inside Module, e.g. "./cmd/cachebench-cr".
	Package string
}

// registerProgramModes registers modes measured by program p. Their Start and
// Dynamic fail with an error naming the program until the program itself
// calls Implement, so that a mode sent to the wrong child says where it runs.
func registerProgramModes(p *Program, modes ...Mode) {
	for _, m := range modes {
		m.Program = p
		m.Start = elsewhere(m.Name, p)
		if m.Dynamic != nil {
			m.Dynamic = elsewhere(m.Name, p)
		}
		Register(m)
	}
}

func elsewhere(name string, p *Program) func(context.Context, Env) (Cache, error) {
	return func(context.Context, Env) (Cache, error) {
		return Cache{}, fmt.Errorf("mode %s is measured by the program %s (%s/%s), not by this one", name, p.Name, p.Module, p.Package)
	}
}

// Implement gives a mode registered for a Program its Start and Dynamic; the
// program calls it for each of its modes before ServeChild. dynamic may be
// nil only when the registered mode has no Dynamic: the parent sends a mode
// the resources its registration says it can cache.
func Implement(name string, start, dynamic func(context.Context, Env) (Cache, error)) error {
	registry.Lock()
	defer registry.Unlock()
	for i := range registry.modes {
		m := &registry.modes[i]
		if m.Name != name {
			continue
		}
		switch {
		case m.Program == nil:
			return fmt.Errorf("mode %s is cachebench's own, not a program's: it cannot be implemented again", name)
		case start == nil:
			return fmt.Errorf("mode %s needs a Start function", name)
		case m.Dynamic != nil && dynamic == nil:
			return fmt.Errorf("mode %s is registered with a dynamic informer for other resources: give it one", name)
		case m.Dynamic == nil && dynamic != nil:
			return fmt.Errorf("mode %s is registered without a dynamic informer: the parent never sends it other resources", name)
		}
		m.Start, m.Dynamic = start, dynamic
		return nil
	}
	return fmt.Errorf("no mode %q is registered", name)
}
