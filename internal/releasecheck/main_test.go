package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// makefileVersion is the Makefile's RELEASE_VERSION, which make release-check
// passes as -version.
func makefileVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RELEASE_VERSION\s*:?=\s*(\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the Makefile sets no RELEASE_VERSION")
	}
	return string(m[1])
}

// README's go get lines are the ones the release check runs, at the
// Makefile's version: what the check proves is what a reader copies.
func TestREADMEHasTheCheckedGoGetLines(t *testing.T) {
	version := makefileVersion(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, o := range outsideModules {
		if line := o.getLine(version); !strings.Contains(readme, "\n"+line+"\n") {
			t.Errorf("README.md lacks the line the release check runs for %s:\n%s", o.name, line)
		}
	}
	for _, m := range regexp.MustCompile("go get (github.com/cachetune/cachetune[^\\s`]*)").FindAllStringSubmatch(readme, -1) {
		if !strings.HasSuffix(m[1], "@"+version) {
			t.Errorf("README.md: go get %s is not at the release version %s", m[1], version)
		}
	}
}

// The nested modules require the root module at the Makefile's version.
func TestNestedModulesRequireTheReleaseVersion(t *testing.T) {
	if err := checkRequires(filepath.Join("..", ".."), makefileVersion(t)); err != nil {
		t.Error(err)
	}
	if err := checkRequires(filepath.Join("..", ".."), "v0.0.1-not-the-release"); err == nil {
		t.Error("checkRequires at another version: want an error")
	}
}

func TestGetLine(t *testing.T) {
	o := outsideModule{get: []string{rootModule + "/pkg/leanstore", rootModule + "/pkg/testkit/apiserver"}}
	want := "go get github.com/cachetune/cachetune/pkg/leanstore@v1.2.3 github.com/cachetune/cachetune/pkg/testkit/apiserver@v1.2.3"
	if got := o.getLine("v1.2.3"); got != want {
		t.Errorf("getLine = %q, want %q", got, want)
	}
}
