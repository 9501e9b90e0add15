package profile

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/felixge/fgprof"
)

// serveWallclock serves /debug/fgprof: fgprof's wall-clock profile over
// ?seconds=N (default 30), in pprof format or, with format=folded, as folded
// stacks. Unlike a CPU profile it also counts time goroutines spend off CPU,
// waiting on I/O, locks or channels: where a slow sync or reconcile waits.
//
// fgprof's own handler sleeps through the whole interval; this one ends the
// profile early when the request ends, so a shutdown does not wait for it.
func serveWallclock(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	d, err := secondsParam(r, 30*time.Second)
	if err != nil {
		serveError(w, http.StatusBadRequest, err.Error())
		return
	}
	format := fgprof.Format(r.FormValue("format"))
	switch format {
	case "", fgprof.FormatPprof:
		format = fgprof.FormatPprof
		setAttachment(w, "fgprof")
	case fgprof.FormatFolded:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	default:
		serveError(w, http.StatusBadRequest, fmt.Sprintf("unknown format %q: want pprof or folded", format))
		return
	}
	stop := fgprof.Start(w, format)
	sleep(r, d)
	if err := stopWallclock(stop); errors.Is(err, errNoSample) {
		serveError(w, http.StatusServiceUnavailable, err.Error())
	}
	// Otherwise the headers are sent with the first byte; a failed write has
	// nobody left to tell.
}

// errNoSample is a wall-clock profile that ended before its first sample.
var errNoSample = errors.New("fgprof: the request ended before the profile's first sample")

// stopWallclock stops an fgprof profile and writes it. fgprof (v0.9.5)
// divides by its sample count, so a profile ended before its first sample
// (the request cancelled within about 10 ms, by its client or a shutdown)
// panics before writing anything; that is errNoSample, not a panic of the
// handler. Its sampling goroutine has ended by then.
func stopWallclock(stop func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w (%v)", errNoSample, p)
		}
	}()
	return stop()
}
