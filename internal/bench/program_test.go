package bench

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// withTestMode registers m for the test and removes it afterwards, so that
// the registry other tests read is unchanged.
func withTestMode(t *testing.T, p *Program, m Mode) {
	t.Helper()
	registerProgramModes(p, m)
	t.Cleanup(func() {
		registry.Lock()
		defer registry.Unlock()
		registry.modes = slices.DeleteFunc(registry.modes, func(o Mode) bool { return o.Name == m.Name })
	})
}

func TestProgramModes(t *testing.T) {
	p := &Program{Name: "cachebench-test", Module: "testmodule", Package: "./cmd/cachebench-test"}
	stub := func(context.Context, Env) (Cache, error) { return Cache{}, nil }
	withTestMode(t, p, Mode{Name: "test/typed/stream", Title: "test", Streaming: true})
	withTestMode(t, p, Mode{Name: "test/dynamic/stream", Title: "test", Streaming: true, Dynamic: stub})

	// Until the program implements it, the mode says where it runs.
	m, ok := Lookup("test/typed/stream")
	if !ok || m.Program != p {
		t.Fatalf("Lookup = %+v, %v; want the mode of program %s", m, ok, p.Name)
	}
	if _, err := m.Start(context.Background(), Env{}); err == nil || !strings.Contains(err.Error(), "measured by the program cachebench-test (testmodule/./cmd/cachebench-test)") {
		t.Errorf("the stub's error = %v, want one naming the program", err)
	}
	if d, _ := Lookup("test/dynamic/stream"); d.Dynamic == nil {
		t.Error("a program mode registered with a dynamic informer lost it")
	} else if _, err := d.Dynamic(context.Background(), Env{}); err == nil {
		t.Error("the dynamic stub did not fail")
	}

	for _, tc := range []struct {
		name           string
		start, dynamic func(context.Context, Env) (Cache, error)
		want           string
	}{
		{"nope/stream", stub, nil, `no mode "nope/stream" is registered`},
		{"client-go/typed/stream", stub, stub, "is cachebench's own"},
		{"test/typed/stream", nil, nil, "needs a Start function"},
		{"test/typed/stream", stub, stub, "registered without a dynamic informer"},
		{"test/dynamic/stream", stub, nil, "registered with a dynamic informer"},
	} {
		if err := Implement(tc.name, tc.start, tc.dynamic); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Implement(%s) = %v, want an error with %q", tc.name, err, tc.want)
		}
	}

	called := false
	if err := Implement("test/typed/stream", func(context.Context, Env) (Cache, error) { called = true; return Cache{}, nil }, nil); err != nil {
		t.Fatal(err)
	}
	m, _ = Lookup("test/typed/stream")
	if _, err := m.Start(context.Background(), Env{}); err != nil || !called {
		t.Errorf("after Implement, Start gave %v and called the implementation: %v", err, called)
	}
}

// TestControllerRuntimeModes checks the registration the controller-runtime
// child program relies on: every such mode is extra (the default run does not
// build the program), streaming, typed, and stubbed until implemented.
func TestControllerRuntimeModes(t *testing.T) {
	n := 0
	for _, m := range Modes() {
		if !strings.HasPrefix(m.Name, "controller-runtime/") {
			if m.Program != nil {
				t.Errorf("mode %s is measured by %s", m.Name, m.Program.Name)
			}
			continue
		}
		n++
		if m.Program != ControllerRuntime || !m.Extra || !m.Streaming || m.Dynamic == nil {
			t.Errorf("mode %s: program %v, extra %v, streaming %v, dynamic %v; want %s, extra, streaming, with a dynamic informer",
				m.Name, m.Program, m.Extra, m.Streaming, m.Dynamic != nil, ControllerRuntime.Name)
		}
		if _, err := m.Start(context.Background(), Env{}); err == nil || !strings.Contains(err.Error(), ControllerRuntime.Name) {
			t.Errorf("mode %s started in cachebench's own process: %v", m.Name, err)
		}
	}
	if n != 5 {
		t.Errorf("%d controller-runtime modes, want 5", n)
	}
	def, err := Select("")
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(def, func(m Mode) bool { return m.Program != nil }) {
		t.Error("the default set has a mode measured by another program")
	}
}
