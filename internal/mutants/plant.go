package mutants

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Mutate returns src with each edit's Old replaced by its New. An Old that
// does not occur exactly once is an error: the code it names moved or
// changed, and the mutant must follow it.
func Mutate(src string, edits []Edit) (string, error) {
	for _, e := range edits {
		switch n := strings.Count(src, e.Old); n {
		case 1:
			src = strings.Replace(src, e.Old, e.New, 1)
		case 0:
			return "", fmt.Errorf("%s: the snippet to replace is not there (the code moved: update the mutant): %q", e.File, firstLine(e.Old))
		default:
			return "", fmt.Errorf("%s: the snippet to replace occurs %d times, want once: %q", e.File, n, firstLine(e.Old))
		}
	}
	return src, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// overlay is go build's -overlay file.
type overlay struct {
	Replace map[string]string
}

// Plant writes m's mutated files under dir and the overlay that maps the
// real files (under root, the module root) to them, and returns the
// overlay's path. The real files are only read.
func Plant(m Mutant, root, dir string) (string, error) {
	byFile := map[string][]Edit{}
	for _, e := range m.Edits {
		byFile[e.File] = append(byFile[e.File], e)
	}
	if len(byFile) == 0 {
		return "", fmt.Errorf("mutant %s has no edit", m.Name)
	}
	files := make([]string, 0, len(byFile))
	for f := range byFile {
		files = append(files, f)
	}
	sort.Strings(files)
	ov := overlay{Replace: map[string]string{}}
	for i, f := range files {
		real := filepath.Join(root, filepath.FromSlash(f))
		src, err := os.ReadFile(real)
		if err != nil {
			return "", err
		}
		out, err := Mutate(string(src), byFile[f])
		if err != nil {
			return "", err
		}
		// One directory per file: two mutated files may share a base name.
		fdir := filepath.Join(dir, fmt.Sprint(i))
		if err := os.MkdirAll(fdir, 0o755); err != nil {
			return "", err
		}
		copyPath := filepath.Join(fdir, filepath.Base(real))
		if err := os.WriteFile(copyPath, []byte(out), 0o644); err != nil {
			return "", err
		}
		ov.Replace[real] = copyPath
	}
	b, err := json.MarshalIndent(ov, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "overlay.json")
	return path, os.WriteFile(path, b, 0o644)
}
