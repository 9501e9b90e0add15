package profile

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"time"
)

// IndexFile is the name of the JSON index WatchSpikes keeps in its Dir.
const IndexFile = "index.json"

// Capture is one entry of the spike index: why a capture was taken and what
// it wrote.
type Capture struct {
	// Time is when the trigger fired.
	Time time.Time `json:"time"`
	// Trigger is TriggerHeapBytes, TriggerHeapGrowth or TriggerSchedP99.
	Trigger string `json:"trigger"`
	// Metric is the runtime/metrics name the trigger read.
	Metric string `json:"metric"`
	// Unit is the unit of Value, Threshold and Baseline: "bytes" or "seconds".
	Unit string `json:"unit"`
	// Value is what the metric read; Threshold the level it reached.
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	// Baseline is the moving baseline a growth ratio compared with.
	Baseline float64 `json:"baseline,omitempty"`
	// Files are the captured files, relative to the index's directory:
	// *-heap.pb.gz and *-goroutine.pb.gz (pprof format) and *-trace.out
	// (runtime/trace, for go tool trace).
	Files []string `json:"files"`
	// Errors lists files that could not be written, and index trouble.
	Errors []string `json:"errors,omitempty"`
}

// spikeIndex is the content of index.json, oldest capture first.
type spikeIndex struct {
	Captures []Capture `json:"captures"`
}

func loadIndex(dir string) (*spikeIndex, error) {
	idx := &spikeIndex{}
	b, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if errors.Is(err, fs.ErrNotExist) {
		return idx, nil
	}
	if err != nil {
		return nil, fmt.Errorf("profile: spike watcher: read index: %w", err)
	}
	if err := json.Unmarshal(b, idx); err != nil {
		return nil, fmt.Errorf("profile: spike watcher: parse %s: %w", filepath.Join(dir, IndexFile), err)
	}
	return idx, nil
}

// add appends c, deletes the oldest captures until at most maxFiles files
// remain (always keeping c), and rewrites the index.
func (idx *spikeIndex) add(dir string, c Capture, maxFiles int) error {
	idx.Captures = append(idx.Captures, c)
	files := 0
	for _, c := range idx.Captures {
		files += len(c.Files)
	}
	var errs []error
	for files > maxFiles && len(idx.Captures) > 1 {
		old := idx.Captures[0]
		idx.Captures = idx.Captures[1:]
		files -= len(old.Files)
		for _, f := range old.Files {
			if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	// Write and rename, so that a reader (or a kill) never sees half an index.
	tmp := filepath.Join(dir, IndexFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return errors.Join(append(errs, err)...)
	}
	if err := os.Rename(tmp, filepath.Join(dir, IndexFile)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// writeCapture writes the files of one capture; fr is nil without a trace.
func writeCapture(dir string, at time.Time, trig trigger, fr *trace.FlightRecorder) Capture {
	c := Capture{
		Time: at, Trigger: trig.name, Metric: trig.metric, Unit: trig.unit,
		Value: trig.value, Threshold: trig.threshold, Baseline: trig.baseline,
		Files: []string{},
	}
	prefix := "spike-" + at.UTC().Format("20060102T150405.000Z")
	write := func(suffix string, to func(io.Writer) error) {
		name := prefix + suffix
		if err := writeFile(filepath.Join(dir, name), to); err != nil {
			c.Errors = append(c.Errors, fmt.Sprintf("%s: %v", name, err))
			return
		}
		c.Files = append(c.Files, name)
	}
	write("-heap.pb.gz", func(w io.Writer) error { return pprof.Lookup("heap").WriteTo(w, 0) })
	write("-goroutine.pb.gz", func(w io.Writer) error { return pprof.Lookup("goroutine").WriteTo(w, 0) })
	if fr != nil {
		write("-trace.out", func(w io.Writer) error { _, err := fr.WriteTo(w); return err })
	}
	return c
}

// writeFile creates path and fills it with to, removing it if anything fails.
func writeFile(path string, to func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = to(bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
