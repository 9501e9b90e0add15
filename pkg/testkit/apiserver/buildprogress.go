package apiserver

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// buildProgressEvery is how often a build that takes minutes says how far it
// got.
const buildProgressEvery = 30 * time.Second

// buildOutput takes what `go build -v` writes: a line per package as it is
// compiled (cached packages are not listed), and compiler errors. It counts
// the packages for the progress lines and keeps everything else for the
// error of a failed build.
type buildOutput struct {
	mu       sync.Mutex
	packages int
	last     string
	partial  []byte
	errors   bytes.Buffer
}

func (b *buildOutput) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.partial = append(b.partial, p...)
	for {
		i := bytes.IndexByte(b.partial, '\n')
		if i < 0 {
			break
		}
		b.line(string(b.partial[:i]))
		b.partial = b.partial[i+1:]
	}
	return len(p), nil
}

// line files one line: an import path alone is a package compiled.
func (b *buildOutput) line(l string) {
	if l != "" && !strings.ContainsAny(l, " \t:#") {
		b.packages++
		b.last = l
		return
	}
	b.errors.WriteString(l + "\n")
}

// output is what the build wrote besides the package lines.
func (b *buildOutput) output() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.errors.String() + string(b.partial)
}

// report writes a progress line to w every interval until stop is called:
// the time so far, the packages compiled and the last of them.
func (b *buildOutput) report(w io.Writer, start time.Time, every time.Duration) (stop func()) {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				b.mu.Lock()
				n, last := b.packages, b.last
				b.mu.Unlock()
				line := fmt.Sprintf("  building: %s, %d packages compiled", time.Since(start).Round(time.Second), n)
				if last != "" {
					line += " (last " + last + ")"
				}
				fmt.Fprintln(w, line)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}
