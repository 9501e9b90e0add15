package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// outsideModule is a module of a user of cachetune: a directory of
// testdata/ copied out of the checkout, the packages its go get line names,
// and what to run in it.
type outsideModule struct {
	name    string     // testdata/NAME, and the module example.com/NAME
	get     []string   // packages to go get at the version: README's line
	modules []string   // modules that must resolve to the version
	run     [][]string // commands, in order
}

// outsideModules are the two kinds of users README's "Use it from your
// project" addresses.
var outsideModules = []outsideModule{
	{
		name:    "clientgo",
		get:     []string{rootModule + "/pkg/leanstore", rootModule + "/pkg/testkit/apiserver"},
		modules: []string{rootModule},
		run: [][]string{
			{"go", "test", "-count=1", "-v", "."}, // the test kit: a real kube-apiserver, namespaces listed
			{"go", "run", "."},                    // leanstore against it
		},
	},
	{
		name: "kubebuilder",
		get: []string{
			rootModule + "/controllerruntime/leancache",
			rootModule + "/controllerruntime/profiling",
			rootModule + "/pkg/testkit/apiserver",
		},
		modules: []string{rootModule, rootModule + "/controllerruntime"},
		run:     [][]string{{"go", "run", "."}}, // a manager's cache from leancache, profiles on a metrics server's extra handlers
	},
}

// getLine is the go get command README gives for o at version.
func (o outsideModule) getLine(version string) string {
	args := []string{"go", "get"}
	for _, p := range o.get {
		args = append(args, p+"@"+version)
	}
	return strings.Join(args, " ")
}

// outside creates o in a directory outside the checkout, as its user would:
// go mod init, README's go get line, go mod tidy; checks that it has no
// replace directive and resolves cachetune's modules to the version; then
// runs its commands.
func (c *check) outside(ctx context.Context, o outsideModule) error {
	dir := filepath.Join(c.tmp, "outside", o.name)
	err := c.step(o.name+": create the module with go get, no replace directive", func() error {
		if err := copyDir(filepath.Join(c.root, "internal", "releasecheck", "testdata", o.name), dir); err != nil {
			return err
		}
		if err := c.goCmd(ctx, dir, "go", "mod", "init", "example.com/"+o.name); err != nil {
			return err
		}
		fmt.Printf("releasecheck: $ %s\n", o.getLine(c.version))
		if err := c.goCmd(ctx, dir, strings.Fields(o.getLine(c.version))...); err != nil {
			return err
		}
		if err := c.goCmd(ctx, dir, "go", "mod", "tidy"); err != nil {
			return err
		}
		return c.checkResolved(ctx, dir, o)
	})
	if err != nil {
		return err
	}
	for _, args := range o.run {
		if err := c.step(o.name+": "+strings.Join(args, " "), func() error { return c.goCmd(ctx, dir, args...) }); err != nil {
			return err
		}
	}
	return nil
}

// checkResolved checks the outside module's go.mod: no replace directive,
// and cachetune's modules at the version.
func (c *check) checkResolved(ctx context.Context, dir string, o outsideModule) error {
	out, err := c.goOutput(ctx, dir, "mod", "edit", "-json")
	if err != nil {
		return err
	}
	var mod struct{ Replace []json.RawMessage }
	if err := json.Unmarshal(out, &mod); err != nil {
		return err
	}
	if len(mod.Replace) > 0 {
		return fmt.Errorf("go.mod of %s has replace directives: %s", o.name, out)
	}
	for _, m := range o.modules {
		out, err := c.goOutput(ctx, dir, "list", "-m", "-f", "{{.Version}} {{.Dir}}", m)
		if err != nil {
			return err
		}
		version, moddir, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
		if version != c.version {
			return fmt.Errorf("%s resolves %s to %s, want %s", o.name, m, version, c.version)
		}
		if !strings.HasPrefix(moddir, c.modDir) {
			return fmt.Errorf("%s builds %s from %s, not from the module cache", o.name, m, moddir)
		}
		fmt.Printf("releasecheck: %s uses %s %s\n", o.name, m, version)
	}
	return nil
}

// copyDir copies the files of from (not its subdirectories) into to.
func copyDir(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
