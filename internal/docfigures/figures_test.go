package docfigures

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		text string
		doc  bool
		want []string
	}{
		{"| typed | 34.6 KB | 1.07–1.09 | 1.00 / 1.20 | 275 µs |", true, []string{"34.6", "1.07", "1.09", "1", "1.2", "275"}},
		{"10,000 Pods, 105,000 objects, 1,200 changes", true, []string{"10000", "105000", "1200"}},
		{"at 1k / 30k (100k), 2 kB, 3kB", true, []string{"1000", "30000", "100000", "2", "3"}},
		{"client-go v0.37.2 on k8s, go1.26, 2.6 GiB", true, []string{"2.6"}},
		{"`--sizes 1000,10000` and [the file](../bench/results/x-2.txt) at 1.8-1.9x", true, []string{"1.8", "1.9"}},
		{"leanstore/typed/stream  10000  0/105000/0  17.4", false, []string{"10000", "0", "105000", "0", "17.4"}},
		// In a results file a version is a number like any other.
		{"server v1.37.2", false, []string{"1.37.2"}},
	} {
		got := Numbers(tc.text, tc.doc)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Numbers(%q, %v) = %q, want %q", tc.text, tc.doc, got, tc.want)
		}
	}
}

func TestParse(t *testing.T) {
	src := `# Title

<!-- figures: bench/results/a.txt -->
| mode | KB |
|---|---|
| typed | 17.4 |

A paragraph that quotes nothing: 99.

<!-- figures: bench/results/a.txt bench/results/b.txt except 50% 16 -->
The typed cache is 17.4 KB, 50% of client-go's,
over 16 modes.
Still the same paragraph: 3.9.

Not marked: 42.
`
	blocks, err := Parse("doc.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{Doc: "doc.md", Line: 3, Files: []string{"bench/results/a.txt"}, Numbers: []Number{{"17.4", 6}}},
		{Doc: "doc.md", Line: 10, Files: []string{"bench/results/a.txt", "bench/results/b.txt"}, Except: []string{"50", "16"},
			Numbers: []Number{{"17.4", 11}, {"50", 11}, {"16", 12}, {"3.9", 13}}},
	}
	if diff := cmp.Diff(want, blocks); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"<!-- figures: -->\ntext 1\n", "<!-- figures: a.txt -->\n\n## Heading\n", "<!-- figures: a.txt -->\n"} {
		if _, err := Parse("bad.md", []byte(bad)); err == nil {
			t.Errorf("Parse(%q) accepted it", bad)
		}
	}
}

// TestCheckFindsWhatIsMissing plants a figure its file lacks, an exception
// the block does not use and a file that does not exist.
func TestCheckFindsWhatIsMissing(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bench/results/run.txt", "mode  KB/obj  peak\ntyped  17.4  1.20\nlean  3.9  1.35\n")
	write("doc.md", `<!-- figures: bench/results/run.txt except 22% -->
| mode | KB | peak |
|---|---|---|
| typed | 17.4 | 1.2 |
| lean | 3.9 (22%) | 1.36 |

<!-- figures: bench/results/run.txt except 7 -->
Lean is 3.9 KB.

<!-- figures: bench/results/gone.txt -->
Nothing here.
`)
	problems, err := Check(root, []string{"doc.md"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := []string{
		"doc.md:5: 1.36 is not in bench/results/run.txt",
		"doc.md:7: the exception 7 is not in the block",
		"doc.md:10: results file bench/results/gone.txt: open " + filepath.Join(root, "bench/results/gone.txt") + ": no such file or directory",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// TestDocsQuoteCommittedFigures is the check itself: every figure that
// README.md and docs/*.md quote under a figures marker is in the committed
// results file the marker names.
func TestDocsQuoteCommittedFigures(t *testing.T) {
	root := filepath.Join("..", "..")
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	rel := []string{"README.md"}
	for _, d := range docs {
		rel = append(rel, strings.TrimPrefix(d, root+string(filepath.Separator)))
	}
	problems, err := Check(root, rel)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	// The check is only worth something if the documents are marked.
	var blocks int
	for _, d := range rel {
		src, err := os.ReadFile(filepath.Join(root, d))
		if err != nil {
			t.Fatal(err)
		}
		b, err := Parse(d, src)
		if err != nil {
			t.Fatal(err)
		}
		blocks += len(b)
	}
	if blocks < 10 {
		t.Errorf("only %d marked tables and paragraphs in README.md and docs/*.md", blocks)
	}
}
