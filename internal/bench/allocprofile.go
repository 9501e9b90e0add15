package bench

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"

	"github.com/google/pprof/profile"
)

// allocProfileRate is the runtime's memory-profile sampling interval, in
// bytes, while an allocation profile is taken: one sample for every 4 KB
// allocated on average, where the runtime's default of 512 KB would give a
// sync of 10,000 small objects only a handful of samples of its hand-over.
// Sampling that often costs CPU: a run with allocation profiles measures
// allocations, not CPU.
const allocProfileRate = 4096

// allocProfile is an allocation profile of one window: the allocs profile
// read at its start, which the profile read at its end is diffed against.
type allocProfile struct {
	path     string
	rate     int
	start    []byte
	finished bool
}

// startAllocProfile starts an allocation profile of a window written to path
// ("" for none): it sets the sampling interval and collects, so that the
// profile read at the start holds everything allocated before the window
// (the runtime's profile is as of the last completed collection). The
// returned profile's write, once the caller has collected at the window's
// end, writes what was allocated in between.
func startAllocProfile(path string) (*allocProfile, error) {
	if path == "" {
		return nil, nil
	}
	p := &allocProfile{path: path, rate: runtime.MemProfileRate}
	runtime.MemProfileRate = allocProfileRate
	runtime.GC()
	var b bytes.Buffer
	if err := pprof.Lookup("allocs").WriteTo(&b, 0); err != nil {
		p.restore()
		return nil, fmt.Errorf("read the allocation profile: %w", err)
	}
	p.start = b.Bytes()
	return p, nil
}

// write writes the allocations since the start, as a profile whose samples
// are the end's less the start's (what go tool pprof -base shows), and
// restores the runtime's sampling interval. It is called after a collection
// at the window's end; nil writes nothing.
func (p *allocProfile) write() error {
	if p == nil || p.finished {
		return nil
	}
	defer p.restore() // after the read: the read scales samples by the interval
	var b bytes.Buffer
	if err := pprof.Lookup("allocs").WriteTo(&b, 0); err != nil {
		return fmt.Errorf("read the allocation profile: %w", err)
	}
	delta, err := diffProfiles(p.start, b.Bytes())
	if err != nil {
		return err
	}
	f, err := os.Create(p.path)
	if err != nil {
		return err
	}
	if err := delta.Write(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	return f.Close()
}

// restore ends the profile without writing it (nil: nothing to end).
func (p *allocProfile) restore() {
	if p == nil || p.finished {
		return
	}
	p.finished = true
	runtime.MemProfileRate = p.rate
}

// diffProfiles returns the profile end less base, both encoded profiles of
// the same kind.
func diffProfiles(base, end []byte) (*profile.Profile, error) {
	b, err := profile.ParseData(base)
	if err != nil {
		return nil, fmt.Errorf("parse the window's first allocation profile: %w", err)
	}
	e, err := profile.ParseData(end)
	if err != nil {
		return nil, fmt.Errorf("parse the window's last allocation profile: %w", err)
	}
	b.Scale(-1)
	d, err := profile.Merge([]*profile.Profile{e, b})
	if err != nil {
		return nil, fmt.Errorf("diff the allocation profiles: %w", err)
	}
	// Writing the first profile allocated in the window (a compressor and
	// the profile's tables): not the measured work's.
	d.FilterSamplesByName(nil, profileWriting, nil, nil)
	return d, nil
}

// profileWriting matches the frame of writing a profile, and no other of
// runtime/pprof's: leanstore's informers run under pprof.Do, whose frame is
// in the stack of everything they allocate.
var profileWriting = regexp.MustCompile(`^runtime/pprof\.\(\*Profile\)\.WriteTo$`)
