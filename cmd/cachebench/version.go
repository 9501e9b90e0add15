package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"
)

// versionInfo is what `cachebench version` prints.
type versionInfo struct {
	// Version is the module version cachebench was built from: a tag when
	// installed with go install ...@version, "(devel)" in a checkout.
	Version string `json:"version"`
	// Revision and Modified are the checkout's commit and whether it had
	// uncommitted changes, when Go recorded them.
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"goVersion"`
	Platform string `json:"platform"`
	// ClientGo is the k8s.io/client-go version; Kubernetes the release it
	// belongs to (client-go v0.X.Y is Kubernetes v1.X.Y).
	ClientGo   string `json:"clientGoVersion"`
	Kubernetes string `json:"kubernetesVersion,omitempty"`
}

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", `Prints cachebench's module version (and commit), the Go version it was built
with, and the Kubernetes client (client-go) it talks to clusters with.`, stdout, stderr)
	out := fs.withOutput("table", "json")
	if err := fs.parse(args); err != nil {
		return err
	}
	v := readVersion()
	if out.value == "json" {
		return writeJSON(stdout, v)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	version := v.Version
	if v.Revision != "" {
		version += " (" + shortRevision(v.Revision)
		if v.Modified {
			version += ", modified"
		}
		version += ")"
	}
	fmt.Fprintf(tw, "cachebench\t%s\n", version)
	fmt.Fprintf(tw, "go\t%s %s\n", v.Go, v.Platform)
	client := v.ClientGo
	if v.Kubernetes != "" {
		client += " (Kubernetes " + v.Kubernetes + ")"
	}
	fmt.Fprintf(tw, "client-go\t%s\n", client)
	return tw.Flush()
}

func readVersion() versionInfo {
	v := versionInfo{Version: "unknown", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, ClientGo: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	for _, d := range bi.Deps {
		if d.Path != "k8s.io/client-go" {
			continue
		}
		if d.Replace != nil {
			d = d.Replace
		}
		v.ClientGo = d.Version
		// client-go v0.37.2 is cut from Kubernetes v1.37.2.
		if rest, ok := strings.CutPrefix(d.Version, "v0."); ok {
			v.Kubernetes = "v1." + rest
		}
	}
	return v
}

func shortRevision(r string) string { return r[:min(len(r), 12)] }
