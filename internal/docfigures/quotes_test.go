package docfigures

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// quote is a figure, or a row of figures, that a document quotes from a
// committed results file, with where the file holds it. The marked blocks
// (Check) hold every number of a block to the numbers of its files, wherever
// they are in them; a quote holds a figure to its own line of the file (the
// mode's row, the labelled summary), and the document to its own text.
type quote struct {
	// doc is the document, relative to the root of the repository, and text
	// the quote as the document has it (a run of white space, a line break
	// included, matches any other).
	doc, text string
	// file is the results file; line what one of its lines must hold, in this
	// order (white space as in text). line[0] names the line (a mode, a
	// label, or a profile line's first field, whose function comes after its
	// figures); the other elements are the figures: each of their numbers must
	// also be in text, as written there, rounded to fewer decimals (2.132 s as
	// 2.13 s) or rounded into a unit a thousand, a million or a billion times
	// larger (34907 bytes as 34.9 KB). An element never matches inside a
	// longer number ("1.2" is not found in "1.25" nor in "11.2").
	file string
	line []string
}

const (
	readme      = "README.md"
	memory      = "docs/memory.md"
	errorsDoc   = "docs/errors-and-backoff.md"
	resultsDoc  = "bench/results/README.md"
	troubleDoc  = "docs/troubleshooting.md"
	shardingDoc = "docs/sharding.md"

	standard   = "bench/results/cachebench-standard.txt"
	defaults   = "bench/results/cachebench-defaults.txt"
	speed      = "bench/results/cachebench-speed.txt"
	encoded    = "bench/results/cachebench-encoded.txt"
	scale      = "bench/results/cachebench-scale.txt"
	crRun      = "bench/results/cachebench-controllerruntime.txt"
	profile    = "bench/results/sync-cpu-profile.txt"
	listCost   = "bench/results/initial-list-cost.txt"
	encBench   = "bench/results/encstore-bench.txt"
	encShared  = "bench/results/encstore-get-shared.txt"
	evPaired   = "bench/results/events-paired.txt"
	goBench    = "bench/results/go-bench.txt"
	resilience = "bench/results/resilience.md"
	shardRun   = "bench/results/cachebench-shard.txt"
)

// normSpace writes every run of white space as one space.
func normSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// indexFigure finds piece in s at or after from, not inside a longer number,
// and returns the index just past it, or -1.
func indexFigure(s, piece string, from int) int {
	digit := func(i int) bool { return i >= 0 && i < len(s) && s[i] >= '0' && s[i] <= '9' }
	first, last := piece[0], piece[len(piece)-1]
	for off := from; off <= len(s); {
		i := strings.Index(s[off:], piece)
		if i < 0 {
			return -1
		}
		i += off
		j := i + len(piece)
		before := first >= '0' && first <= '9' && (digit(i-1) || i >= 2 && s[i-1] == '.' && digit(i-2))
		after := last >= '0' && last <= '9' && (digit(j) || j < len(s) && s[j] == '.' && digit(j+1))
		if !before && !after {
			return j
		}
		off = i + 1
	}
	return -1
}

// holdsInOrder reports whether line holds every piece, in order.
func holdsInOrder(line string, pieces []string) bool {
	at := 0
	for _, p := range pieces {
		if at = indexFigure(line, normSpace(p), at); at < 0 {
			return false
		}
	}
	return true
}

// quotedAs reports whether the number n of a results file is among the
// numbers of a document's text: as written, rounded to fewer decimals, or
// rounded into a unit a thousand, a million or a billion times larger.
func quotedAs(n string, docNumbers []string) bool {
	v, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return slices.Contains(docNumbers, n)
	}
	decimals := func(s string) int {
		if i := strings.IndexByte(s, '.'); i >= 0 {
			return len(s) - i - 1
		}
		return 0
	}
	for _, d := range docNumbers {
		if d == n {
			return true
		}
		w, err := strconv.ParseFloat(d, 64)
		if err != nil || w == 0 {
			continue
		}
		scale := math.Pow(10, float64(decimals(d)))
		if decimals(n) > decimals(d) && math.Round(v*scale) == math.Round(w*scale) {
			return true
		}
		for _, f := range []float64{1e3, 1e6, 1e9} {
			if math.Round(v/f*scale) == math.Round(w*scale) {
				return true
			}
		}
	}
	return false
}

// checkQuotes returns a message for every quote whose text is no longer in
// its document, whose figures are not in its text, or whose line is not in
// its results file.
func checkQuotes(root string, quotes []quote) ([]string, error) {
	read := map[string]string{}
	get := func(name string) (string, error) {
		if s, ok := read[name]; ok {
			return s, nil
		}
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return "", err
		}
		read[name] = string(data)
		return string(data), nil
	}
	var problems []string
	for _, q := range quotes {
		if len(q.line) == 0 || slices.Contains(q.line, "") {
			problems = append(problems, fmt.Sprintf("%s: the entry for %q names no line of %s, or has an empty element", q.doc, q.text, q.file))
			continue
		}
		doc, err := get(q.doc)
		if err != nil {
			return nil, err
		}
		if !strings.Contains(normSpace(doc), normSpace(q.text)) {
			problems = append(problems, fmt.Sprintf("%s no longer has the quote %q (of %s): update its entry in quotes_list_test.go with the document", q.doc, q.text, q.file))
			continue
		}
		docNumbers := Numbers(normSpace(q.text), true)
		for _, p := range q.line[1:] {
			for _, n := range Numbers(p, true) {
				if !quotedAs(n, docNumbers) {
					problems = append(problems, fmt.Sprintf("%s: the quote %q does not have the figure %s that its entry checks in %s", q.doc, q.text, n, q.file))
				}
			}
		}
		results, err := get(q.file)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s quotes %q from %s, which cannot be read: %v", q.doc, q.text, q.file, err))
			continue
		}
		found := false
		for _, l := range strings.Split(results, "\n") {
			if holdsInOrder(normSpace(l), q.line) {
				found = true
				break
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("%s quotes %q, but no line of %s holds %q", q.doc, q.text, q.file, strings.Join(q.line, " … ")))
		}
	}
	return problems, nil
}

// TestDocsQuoteTheirResultsLines is the check over the list in
// quotes_list_test.go: every quote listed there is in its document, and its
// figures are on their line of its results file. It runs in make test and
// make test-short (go test ./... at the root; it needs no server).
func TestDocsQuoteTheirResultsLines(t *testing.T) {
	problems, err := checkQuotes(filepath.Join("..", ".."), quotes)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	figures := 0
	for _, q := range quotes {
		for _, p := range q.line[1:] {
			figures += len(Numbers(p, true))
		}
	}
	t.Logf("%d quotes, %d figures checked", len(quotes), figures)
}

func TestIndexFigure(t *testing.T) {
	for _, tc := range []struct {
		s, piece string
		want     bool
	}{
		{"peak 1.25x", "1.2", false},
		{"peak 11.2x", "1.2", false},
		{"peak 1.2x", "1.2", true},
		{"a 3.07 307 b", "307", true},
		{"a 3070 b", "307", false},
		{"re-list peak 1.00x / 1.20x (churn", "re-list peak 1.00x / 1.20x", true},
	} {
		if got := indexFigure(tc.s, tc.piece, 0) >= 0; got != tc.want {
			t.Errorf("indexFigure(%q, %q) found %v, want %v", tc.s, tc.piece, got, tc.want)
		}
	}
	for _, tc := range []struct {
		n    string
		doc  []string
		want bool
	}{
		{"34907", []string{"34.9"}, true},
		{"8954", []string{"8.95"}, true},
		{"3516059546", []string{"3.5"}, true},
		{"2.132", []string{"2.132"}, true},
		{"2.132", []string{"2.13"}, true},
		{"1", []string{"1.2"}, false},
		{"307", []string{"275", "307"}, true},
		{"307", []string{"308"}, false},
		{"34907", []string{"35"}, true},
	} {
		if got := quotedAs(tc.n, tc.doc); got != tc.want {
			t.Errorf("quotedAs(%q, %q) = %v, want %v", tc.n, tc.doc, got, tc.want)
		}
	}
}

// TestQuotesCatchAPlantedDefect copies the first quote's document and results
// file, changes the figure in each copy in turn, and expects the check to name
// the document, the figure and the file.
func TestQuotesCatchAPlantedDefect(t *testing.T) {
	q := quotes[0]
	src := filepath.Join("..", "..")
	copyTo := func(root, name, old, new string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if old != "" {
			if !strings.Contains(text, old) {
				t.Fatalf("%s does not hold %q", name, old)
			}
			text = strings.Replace(text, old, new, 1)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	figure := q.line[len(q.line)-1]
	last := strings.LastIndexAny(figure, "0123456789")
	wrong := figure[:last] + string('0'+(figure[last]-'0'+1)%10) + figure[last+1:]

	// The results file no longer holds the figure.
	root := t.TempDir()
	copyTo(root, q.doc, "", "")
	copyTo(root, q.file, figure, wrong)
	problems, err := checkQuotes(root, []quote{q})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], q.doc) || !strings.Contains(problems[0], q.file) || !strings.Contains(problems[0], figure) {
		t.Errorf("with %q changed to %q in %s, the check said %q", figure, wrong, q.file, problems)
	}

	// The document no longer quotes it.
	root = t.TempDir()
	copyTo(root, q.doc, normSpace(q.text), "| changed |")
	copyTo(root, q.file, "", "")
	problems, err = checkQuotes(root, []quote{q})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "no longer has") || !strings.Contains(problems[0], q.doc) {
		t.Errorf("with the quote gone from %s, the check said %q", q.doc, problems)
	}

	// An entry that checks a figure its quote does not have.
	bad := q
	bad.line = append(append([]string(nil), q.line...), "0.123")
	root = t.TempDir()
	copyTo(root, q.doc, "", "")
	copyTo(root, q.file, "", "")
	problems, err = checkQuotes(root, []quote{bad})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) == 0 || !strings.Contains(problems[0], "0.123") {
		t.Errorf("an entry checking 0.123, which its quote lacks: the check said %q", problems)
	}
}
