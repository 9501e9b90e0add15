// Package docfigures checks that the figures the README and the guides quote
// from cachetune's committed results are in those results, so that a guide
// never quotes a run that is not the committed one. A table or a paragraph
// that quotes figures of results files is marked, on the line before it, with
// the files:
//
//	<!-- figures: bench/results/cachebench-standard.txt -->
//	| mode | live heap per Pod | ...
//
// Every number in the block (outside inline code and link targets) must then
// be among the numbers of those files. A number the block works out itself
// (a percentage of two figures, a sum) or takes from elsewhere is listed
// after "except", and must appear in the block:
//
//	<!-- figures: bench/results/cachebench-standard.txt except 50% 11% 16 -->
//
// Numbers are compared as written, but for thousands separators ("10,000" is
// 10000, and so is "10k") and trailing zeros after the point ("1.20" is
// "1.2"); a number written right after a letter ("v1.37", "k8s") is a name,
// not a figure.
// TestDocsQuoteCommittedFigures runs the check over README.md and docs/*.md
// in `make test`.
package docfigures

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Block is a marked table or paragraph of a document.
type Block struct {
	// Doc is the document, Line the marker's line in it (from 1).
	Doc  string
	Line int
	// Files are the results files the block quotes, relative to the root of
	// the repository; Except the numbers it does not take from them.
	Files  []string
	Except []string
	// Numbers are the block's numbers, normalized (Normalize), with the line
	// each is on.
	Numbers []Number
}

// Number is a figure in a document.
type Number struct {
	Text string
	Line int
}

var marker = regexp.MustCompile(`^<!--\s*figures:\s*(.*?)\s*-->\s*$`)

// Parse reads the marked blocks of a document. A marker must be followed by
// a table or a paragraph; a marker naming no file is an error.
func Parse(doc string, src []byte) ([]Block, error) {
	lines := strings.Split(string(src), "\n")
	var blocks []Block
	for i := 0; i < len(lines); i++ {
		m := marker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		b := Block{Doc: doc, Line: i + 1}
		files, except, _ := strings.Cut(m[1], " except ")
		b.Files = strings.Fields(files)
		for _, e := range strings.Fields(except) {
			b.Except = append(b.Except, Normalize(strings.TrimRight(e, "%,")))
		}
		if len(b.Files) == 0 {
			return nil, fmt.Errorf("%s:%d: a figures marker names no results file", doc, i+1)
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j == len(lines) || strings.HasPrefix(strings.TrimSpace(lines[j]), "<!--") || strings.HasPrefix(lines[j], "#") {
			return nil, fmt.Errorf("%s:%d: a figures marker must come right before a table or a paragraph", doc, i+1)
		}
		table := strings.HasPrefix(strings.TrimSpace(lines[j]), "|")
		for ; j < len(lines); j++ {
			l := strings.TrimSpace(lines[j])
			if l == "" || table != strings.HasPrefix(l, "|") || strings.HasPrefix(l, "<!--") || strings.HasPrefix(lines[j], "#") {
				break
			}
			for _, n := range Numbers(lines[j], true) {
				b.Numbers = append(b.Numbers, Number{Text: n, Line: j + 1})
			}
		}
		blocks = append(blocks, b)
		i = j - 1
	}
	return blocks, nil
}

var (
	number     = regexp.MustCompile(`\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)*`)
	inlineCode = regexp.MustCompile("`[^`]*`")
	linkTarget = regexp.MustCompile(`\]\([^)]*\)`)
)

// Numbers returns the numbers of text, normalized. In a document (doc),
// inline code, link targets and numbers written right after a letter are
// left out.
func Numbers(text string, doc bool) []string {
	if doc {
		text = inlineCode.ReplaceAllString(text, "")
		text = linkTarget.ReplaceAllString(text, "]")
	}
	var out []string
	for _, loc := range number.FindAllStringIndex(text, -1) {
		if doc && loc[0] > 0 {
			r, _ := utf8.DecodeLastRuneInString(text[:loc[0]])
			if unicode.IsLetter(r) || r == '_' {
				continue
			}
		}
		n := Normalize(text[loc[0]:loc[1]])
		if doc && thousands(text[loc[1]:]) && !strings.Contains(n, ".") {
			n += "000" // 30k is 30000
		}
		out = append(out, n)
	}
	return out
}

// thousands reports whether rest, the text after a number, starts with a
// "k" of thousands: "30k", "30k)", not "30 KB" or "30kB".
func thousands(rest string) bool {
	if !strings.HasPrefix(rest, "k") {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest[1:])
	return len(rest) == 1 || !unicode.IsLetter(r) && !unicode.IsDigit(r)
}

// Normalize writes a number as the check compares it: without thousands
// separators, and without trailing zeros after a single decimal point.
func Normalize(n string) string {
	if strings.Contains(n, ",") {
		n = strings.ReplaceAll(n, ",", "")
	}
	if strings.Count(n, ".") == 1 {
		n = strings.TrimRight(strings.TrimRight(n, "0"), ".")
		if n == "" {
			n = "0"
		}
	}
	return n
}

// Problem is a figure a document quotes that its results files lack, or a
// marker that cannot be checked.
type Problem struct {
	Doc  string
	Line int
	What string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.Doc, p.Line, p.What) }

// Check reads the documents (relative to root) and returns every problem:
// a results file that cannot be read, a number of a block that is neither in
// its files nor an exception, an exception that is not in its block.
func Check(root string, docs []string) ([]Problem, error) {
	files := map[string]map[string]bool{}
	numbersOf := func(file string) (map[string]bool, error) {
		if set, ok := files[file]; ok {
			return set, nil
		}
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return nil, err
		}
		set := map[string]bool{}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			for _, n := range Numbers(sc.Text(), false) {
				set[n] = true
			}
		}
		files[file] = set
		return set, sc.Err()
	}
	var problems []Problem
	for _, doc := range docs {
		src, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			return nil, err
		}
		blocks, err := Parse(doc, src)
		if err != nil {
			return nil, err
		}
		for _, b := range blocks {
			problems = append(problems, checkBlock(b, numbersOf)...)
		}
	}
	return problems, nil
}

func checkBlock(b Block, numbersOf func(string) (map[string]bool, error)) []Problem {
	var problems []Problem
	known := map[string]bool{}
	for _, f := range b.Files {
		set, err := numbersOf(f)
		if err != nil {
			problems = append(problems, Problem{b.Doc, b.Line, fmt.Sprintf("results file %s: %v", f, err)})
			continue
		}
		for n := range set {
			known[n] = true
		}
	}
	except, used := map[string]bool{}, map[string]bool{}
	for _, e := range b.Except {
		except[e] = true
	}
	for _, n := range b.Numbers {
		switch {
		case except[n.Text]:
			used[n.Text] = true
		case !known[n.Text]:
			problems = append(problems, Problem{b.Doc, n.Line, fmt.Sprintf("%s is not in %s", n.Text, strings.Join(b.Files, ", "))})
		}
	}
	for _, e := range b.Except {
		if !used[e] {
			problems = append(problems, Problem{b.Doc, b.Line, fmt.Sprintf("the exception %s is not in the block", e)})
		}
	}
	return problems
}
