// Package checkout finds the cachetune checkout a process runs in, for what
// is built from the repository's nested modules (the local kube-apiserver,
// the controller-runtime child program): they are not shipped with the root
// module, so they exist only in a checkout.
//
// The guide that uses it: README.md, "A local kube-apiserver".
package checkout

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrNotFound is the error Root wraps when no directory above the working
// directory holds the nested module.
var ErrNotFound = errors.New("not in a cachetune checkout")

// Root walks up from the working directory to the directory that holds the
// nested module dir (dir/go.mod), the root of the checkout. When there is
// none, the error wraps ErrNotFound and names dir and the working directory;
// callers add what to do instead.
func Root(dir string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, dir, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no %s/go.mod above %s: %w", dir, wd, ErrNotFound)
		}
	}
}
