package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// A scale run grows the dataset tenfold between sizes, and the server's and
// each mode's memory grow with it: at 30,000 Pods the local server held 9 GiB
// of RSS. Before a larger size, the run projects both linearly from the last
// size and leaves out what would not fit in the machine's available memory,
// rather than let the kernel kill the server or a child halfway through.

// headroom is kept free beyond the projections: the projections are linear
// estimates, and the parent, the page cache and the rest of the machine need
// memory too.
const headroom = 1 << 30

// room projects the memory the next size of a scale run needs.
type room struct {
	// available is what the machine can give the server and a child: its
	// available memory and what the server holds already.
	available uint64
	// server is the server's projected RSS at the next size, 0 when unknown.
	server uint64
	// child maps a mode to its projected peak RSS at the next size.
	child map[string]uint64
}

// projectRoom projects, from the results at the previous size, what the next
// size needs. serverRSS is what the server holds now (0 when not local).
func projectRoom(results []Result, prev, next int, available, serverRSS uint64) room {
	r := room{available: available + serverRSS, child: map[string]uint64{}}
	scale := func(v uint64) uint64 { return uint64(float64(v) * float64(next) / float64(max(prev, 1))) }
	for _, res := range results {
		if res.Objects == 0 {
			continue
		}
		r.child[res.Mode] = max(r.child[res.Mode], scale(res.Whole.PeakRSS))
		if s := res.Whole.Server; s != nil {
			r.server = max(r.server, scale(s.PeakRSS))
		}
	}
	return r
}

// serverFits reports whether the server alone fits, and why not.
func (r room) serverFits() (bool, string) {
	if r.server+headroom <= r.available {
		return true, ""
	}
	return false, fmt.Sprintf("the server would need about %.1f GiB, the machine has %.1f GiB", gib(r.server), gib(r.available-headroom))
}

// modeFits reports whether mode fits beside the server, and why not.
func (r room) modeFits(mode string) (bool, string) {
	c, ok := r.child[mode]
	if !ok || r.server+c+headroom <= r.available {
		return true, ""
	}
	return false, fmt.Sprintf("the mode would need about %.1f GiB beside the server's %.1f GiB, the machine has %.1f GiB",
		gib(c), gib(r.server), gib(r.available-headroom))
}

func gib(b uint64) float64 { return float64(b) / (1 << 30) }

// memAvailable reads MemAvailable from /proc/meminfo, 0 when it cannot.
func memAvailable() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// ProcessRSS reads a process's resident set size from /proc/<pid>/statm, 0 when
// it cannot.
func ProcessRSS(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
