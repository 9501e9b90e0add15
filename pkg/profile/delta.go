package profile

import (
	"bytes"
	"fmt"
	"net/http"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/google/pprof/profile"
)

// defaultDelta is the interval of /debug/pprof/delta_heap when the request
// names none, as for the CPU profile.
const defaultDelta = 30 * time.Second

// serveDeltaHeap serves /debug/pprof/delta_heap?seconds=N: what the heap
// gained and lost over N seconds, as one profile (negative values are
// memory freed). Add gc=1 to collect garbage before each of the two
// snapshots, so that in-use figures are exact rather than as of the last GC.
func serveDeltaHeap(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	d, err := secondsParam(r, defaultDelta)
	if err != nil {
		serveError(w, http.StatusBadRequest, err.Error())
		return
	}
	serveDelta(w, r, "heap", d)
}

// serveDelta takes the cumulative profile name twice, d apart, and serves
// the difference.
func serveDelta(w http.ResponseWriter, r *http.Request, name string, d time.Duration) {
	if r.FormValue("debug") != "" && r.FormValue("debug") != "0" {
		serveError(w, http.StatusBadRequest, "seconds and debug cannot be combined")
		return
	}
	gc := name == "heap" && r.FormValue("gc") != "" && r.FormValue("gc") != "0"

	before, err := snapshot(name, gc)
	if err != nil {
		serveError(w, http.StatusInternalServerError, err.Error())
		return
	}
	sleep(r, d)
	if err := r.Context().Err(); err != nil {
		serveError(w, http.StatusServiceUnavailable, fmt.Sprintf("%s delta interrupted: %v", name, err))
		return
	}
	after, err := snapshot(name, gc)
	if err != nil {
		serveError(w, http.StatusInternalServerError, err.Error())
		return
	}
	delta, err := Delta(before, after)
	if err != nil {
		serveError(w, http.StatusInternalServerError, err.Error())
		return
	}
	setAttachment(w, name+"-delta")
	_ = delta.Write(w) // the response has begun: a failed write has no one to tell
}

// snapshot reads a runtime/pprof profile into its parsed form.
func snapshot(name string, gc bool) (*profile.Profile, error) {
	p := pprof.Lookup(name)
	if p == nil {
		return nil, fmt.Errorf("profile: unknown profile %q", name)
	}
	if gc {
		runtime.GC()
	}
	var buf bytes.Buffer
	if err := p.WriteTo(&buf, 0); err != nil {
		return nil, fmt.Errorf("profile: write %s profile: %w", name, err)
	}
	parsed, err := profile.Parse(&buf)
	if err != nil {
		return nil, fmt.Errorf("profile: parse %s profile: %w", name, err)
	}
	return parsed, nil
}

// Delta returns after minus before: for cumulative profiles (heap, allocs,
// mutex, block) what happened between the two, with negative values where
// a count went down (in-use memory freed). Both must be profiles of the same
// kind from one process; neither is modified. The result spans the time
// between them.
func Delta(before, after *profile.Profile) (*profile.Profile, error) {
	neg := before.Copy()
	neg.Scale(-1)
	d, err := profile.Merge([]*profile.Profile{neg, after})
	if err != nil {
		return nil, fmt.Errorf("profile: subtract profiles: %w", err)
	}
	// Merge keeps the earliest start; the delta covers before..after.
	d.TimeNanos = after.TimeNanos
	d.DurationNanos = after.TimeNanos - before.TimeNanos
	return d, nil
}
