package profile_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cachetune/cachetune/internal/leakcheck"
	cprofile "github.com/cachetune/cachetune/pkg/profile"
)

// spikeBallast is the known amount the spike test allocates and holds.
var spikeBallast [][]byte

func TestWatchSpikesCapturesOnceWithinCooldown(t *testing.T) {
	leakcheck.Check(t)
	dir := t.TempDir()
	const ballast = 96 << 20
	runtime.GC() // start from live objects only, not a previous test's garbage
	threshold := cprofile.ReadRuntime().HeapObjectsBytes + ballast/2

	captures := make(chan cprofile.Capture, 10)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- cprofile.WatchSpikes(ctx, cprofile.SpikeConfig{
			Dir:         dir,
			HeapBytes:   threshold,
			Interval:    10 * time.Millisecond,
			Cooldown:    time.Hour,
			TraceMinAge: time.Second,
			OnCapture:   func(c cprofile.Capture) { captures <- c },
		})
	}()
	// stop ends the watch and returns its result; the test may fail before
	// calling it, so a cleanup calls it too.
	stop := sync.OnceValue(func() error { cancel(); return <-done })
	defer func() { _ = stop() }() // the test checks stop's result where it calls it

	// Let the flight recorder hold some trace before the spike.
	time.Sleep(100 * time.Millisecond)
	for range ballast / (1 << 20) {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // touch every page
		}
		spikeBallast = append(spikeBallast, b)
	}
	defer func() { spikeBallast = nil }()

	var first cprofile.Capture
	select {
	case first = <-captures:
	case <-time.After(10 * time.Second):
		t.Fatalf("no capture 10 s after allocating %d MiB over a %d MiB threshold", ballast>>20, threshold>>20)
	}
	// The heap stays above the threshold for 50 more intervals: the
	// cooldown must hold them all back.
	select {
	case c := <-captures:
		t.Fatalf("second capture within the cooldown: %+v", c)
	case <-time.After(500 * time.Millisecond):
	}
	if err := stop(); err != nil {
		t.Fatalf("WatchSpikes: %v", err)
	}

	if first.Trigger != cprofile.TriggerHeapBytes || first.Value < float64(threshold) || first.Threshold != float64(threshold) || first.Unit != "bytes" {
		t.Errorf("capture %+v: want heap_bytes with a value at or above %d", first, threshold)
	}
	if len(first.Errors) != 0 {
		t.Errorf("capture errors: %v", first.Errors)
	}

	// index.json lists exactly this capture.
	b, err := os.ReadFile(filepath.Join(dir, cprofile.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Captures []cprofile.Capture `json:"captures"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if len(idx.Captures) != 1 {
		t.Fatalf("index.json has %d captures, want 1:\n%s", len(idx.Captures), b)
	}
	if diff := cmp.Diff(first.Files, idx.Captures[0].Files); diff != "" {
		t.Errorf("index files differ from OnCapture's (-want +got):\n%s", diff)
	}
	for _, key := range []string{`"trigger": "heap_bytes"`, `"metric": "/memory/classes/heap/objects:bytes"`, `"threshold"`, `"value"`, `"time"`, `"files"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("index.json lacks %s:\n%s", key, b)
		}
	}

	// The files: two profiles that parse, and a Go execution trace.
	if len(first.Files) != 3 {
		t.Fatalf("capture files %v, want heap, goroutine and trace", first.Files)
	}
	for _, f := range first.Files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(f, "-heap.pb.gz"):
			p := parseProfile(t, f, data)
			if !contains(sampleTypes(p), "inuse_space/bytes") {
				t.Errorf("%s: sample types %v, want inuse_space", f, sampleTypes(p))
			}
		case strings.HasSuffix(f, "-goroutine.pb.gz"):
			p := parseProfile(t, f, data)
			if len(p.Sample) == 0 {
				t.Errorf("%s: no goroutines", f)
			}
		case strings.HasSuffix(f, "-trace.out"):
			if len(data) == 0 || !isGoTrace(data) {
				t.Errorf("%s: %d bytes starting %q, want a Go trace", f, len(data), truncate(data))
			}
		default:
			t.Errorf("unexpected capture file %s", f)
		}
	}
}

func TestWatchSpikesKeepsAtMostMaxFiles(t *testing.T) {
	leakcheck.Check(t)
	dir := t.TempDir()
	captures := make(chan cprofile.Capture, 100)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- cprofile.WatchSpikes(ctx, cprofile.SpikeConfig{
			Dir:          dir,
			HeapBytes:    1, // always over: fires at every interval
			Interval:     20 * time.Millisecond,
			Cooldown:     time.Nanosecond,
			MaxFiles:     6,
			DisableTrace: true,
			OnCapture: func(c cprofile.Capture) {
				captures <- c
				if len(captures) == 5 {
					cancel() // no capture after this one
				}
			},
		})
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatalf("fewer than 5 captures in 10 s")
	}
	if err != nil {
		t.Fatal(err)
	}
	close(captures)
	var all []cprofile.Capture
	for c := range captures {
		all = append(all, c)
	}

	var idx struct {
		Captures []cprofile.Capture `json:"captures"`
	}
	b, err := os.ReadFile(filepath.Join(dir, cprofile.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	// Six files of two per capture: the three newest captures.
	var listed []string
	for _, c := range idx.Captures {
		listed = append(listed, c.Files...)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, e := range entries {
		if e.Name() != cprofile.IndexFile {
			onDisk = append(onDisk, e.Name())
		}
	}
	sort.Strings(listed)
	if len(listed) != 6 {
		t.Errorf("index lists %d files, want 6 (MaxFiles)", len(listed))
	}
	if diff := cmp.Diff(listed, onDisk); diff != "" {
		t.Errorf("files on disk differ from the index (-index +disk):\n%s", diff)
	}
	// The two oldest were deleted, the three newest kept.
	var want, got []time.Time
	for _, c := range all[2:] {
		want = append(want, c.Time)
	}
	for _, c := range idx.Captures {
		got = append(got, c.Time)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("captures kept in the index (-want +got):\n%s", diff)
	}

	// A restart on the same Dir keeps the index and the cooldown.
	ctx2, cancel2 := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel2()
	restarted := 0
	if err := cprofile.WatchSpikes(ctx2, cprofile.SpikeConfig{
		Dir: dir, HeapBytes: 1, Interval: 20 * time.Millisecond, Cooldown: time.Hour, DisableTrace: true,
		OnCapture: func(cprofile.Capture) { restarted++ },
	}); err != nil {
		t.Fatal(err)
	}
	if restarted != 0 {
		t.Errorf("%d captures right after a restart, want the cooldown of the last one honoured", restarted)
	}
}

func TestWatchSpikesRejectsBadConfig(t *testing.T) {
	if err := cprofile.WatchSpikes(t.Context(), cprofile.SpikeConfig{Dir: t.TempDir()}); err == nil {
		t.Error("WatchSpikes without a trigger returned nil")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, cprofile.IndexFile), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cprofile.WatchSpikes(t.Context(), cprofile.SpikeConfig{Dir: dir, HeapBytes: 1}); err == nil || !strings.Contains(err.Error(), cprofile.IndexFile) {
		t.Errorf("WatchSpikes on a corrupt index: %v, want an error naming it", err)
	}
}

func TestTraceEndpointAlongsideFlightRecorder(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- cprofile.WatchSpikes(ctx, cprofile.SpikeConfig{Dir: t.TempDir(), HeapBytes: 1 << 50})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WatchSpikes: %v", err)
		}
	}()
	time.Sleep(50 * time.Millisecond) // the flight recorder is on

	s := startServer(t)
	status, body := get(t, s, "/debug/pprof/trace?seconds=0.2")
	if status != 200 || !isGoTrace(body) {
		t.Errorf("trace with the flight recorder on: status %d, body starts %q", status, truncate(body))
	}
}
