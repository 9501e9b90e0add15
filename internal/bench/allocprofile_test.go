package bench

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

var allocSink [][]byte

//go:noinline
func allocateBeforeTheWindow() {
	for range 256 {
		allocSink = append(allocSink, make([]byte, 8192))
	}
}

//go:noinline
func allocateInTheWindow() {
	for range 1024 {
		allocSink = append(allocSink, make([]byte, 4096))
	}
}

// TestAllocProfileHoldsTheWindowOnly checks that the allocation profile of a
// window holds what was allocated in it, about as many bytes as were, and
// not what was allocated before it, and that the runtime's sampling interval
// is the process's own again afterwards.
func TestAllocProfileHoldsTheWindowOnly(t *testing.T) {
	rate := runtime.MemProfileRate
	allocateBeforeTheWindow()
	path := filepath.Join(t.TempDir(), "sync.allocs.pprof")
	p, err := startAllocProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Under labels, as leanstore's informers run: pprof.Do's frame is in
	// the stack of the allocations.
	pprof.Do(context.Background(), pprof.Labels("informer", "test"), func(context.Context) { allocateInTheWindow() })
	runtime.GC()
	if err := p.write(); err != nil {
		t.Fatal(err)
	}
	allocSink = nil
	if runtime.MemProfileRate != rate {
		t.Errorf("MemProfileRate = %d after the profile, want the process's %d", runtime.MemProfileRate, rate)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	prof, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	space := -1
	for i, st := range prof.SampleType {
		if st.Type == "alloc_space" {
			space = i
		}
	}
	if space < 0 {
		t.Fatalf("no alloc_space in the profile's sample types %v", prof.SampleType)
	}
	byFunc := map[string]int64{}
	for _, s := range prof.Sample {
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				if n := l.Function.Name; n == "runtime/pprof.(*Profile).WriteTo" {
					byFunc["WriteTo"] += s.Value[space]
				} else if strings.HasSuffix(n, ".allocateInTheWindow") || strings.HasSuffix(n, ".allocateBeforeTheWindow") {
					byFunc[n[strings.LastIndex(n, ".")+1:]] += s.Value[space]
				}
			}
		}
	}
	// 4 MiB in the window, sampled every 4 KB: the estimate is within a few
	// per cent; the slice the sink grew by is not counted.
	if got, want := byFunc["allocateInTheWindow"], int64(1024*4096); got < want*3/4 || got > want*5/4 {
		t.Errorf("allocateInTheWindow: %d bytes in the profile, want about %d", got, want)
	}
	if got := byFunc["WriteTo"]; got != 0 {
		t.Errorf("runtime/pprof.(*Profile).WriteTo: %d bytes in the profile, want none: writing the first profile is not the window's work", got)
	}
	if got := byFunc["allocateBeforeTheWindow"]; got != 0 {
		t.Errorf("allocateBeforeTheWindow: %d bytes in the profile, want none: it allocated before the window", got)
	}
}

// TestNoAllocProfileIsANoOp checks that the window of a run without
// allocation profiles neither changes the sampling interval nor writes.
func TestNoAllocProfileIsANoOp(t *testing.T) {
	rate := runtime.MemProfileRate
	p, err := startAllocProfile("")
	if err != nil || p != nil {
		t.Fatalf("startAllocProfile(\"\") = %v, %v; want nil, nil", p, err)
	}
	if err := p.write(); err != nil {
		t.Fatal(err)
	}
	p.restore()
	if runtime.MemProfileRate != rate {
		t.Errorf("MemProfileRate = %d, want %d", runtime.MemProfileRate, rate)
	}
}
