package profile

import (
	"bufio"
	"bytes"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The handlers in this file do what net/http/pprof's do, on this package's
// mux only (see routes).

// servePprofIndex serves /debug/pprof/ as an index, and /debug/pprof/NAME as
// the runtime/pprof profile NAME (heap, goroutine, allocs, block, mutex,
// threadcreate), with net/http/pprof's parameters: debug=N for text, gc=1 to
// collect garbage before a heap profile, seconds=N for a delta profile.
func servePprofIndex(w http.ResponseWriter, r *http.Request) {
	if name, ok := strings.CutPrefix(r.URL.Path, "/debug/pprof/"); ok && name != "" {
		serveNamedProfile(w, r, name)
		return
	}
	profiles := pprof.Profiles()
	sort.Slice(profiles, func(i, j int) bool { return profiles[i].Name() < profiles[j].Name() })

	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	b.WriteString("<html><head><title>/debug/pprof/</title></head><body>\n<h1>/debug/pprof/</h1>\n<table>\n")
	for _, p := range profiles {
		name := html.EscapeString(p.Name())
		fmt.Fprintf(&b, "<tr><td align=right>%d</td><td><a href=\"%s?debug=1\">%s</a></td></tr>\n", p.Count(), name, name)
	}
	b.WriteString("</table>\n<ul>\n")
	for _, e := range []struct{ href, what string }{
		{"profile?seconds=30", "CPU profile"},
		{"trace?seconds=1", "execution trace"},
		{"delta_heap?seconds=30", "heap growth over an interval"},
		{"cmdline", "command line"},
		{"/debug/fgprof?seconds=30", "wall-clock profile (fgprof)"},
		{"/metrics", "Prometheus metrics"},
		{"/readyz", "readiness checks"},
	} {
		fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a></li>\n", e.href, e.what)
	}
	b.WriteString("</ul>\n</body></html>\n")
	_, _ = io.WriteString(w, b.String()) // a client that hung up reads no error
}

// cumulative lists the profiles whose counts only grow, so that two of them
// seconds apart can be subtracted (net/http/pprof accepts the same set).
var cumulative = map[string]bool{
	"allocs": true, "block": true, "goroutine": true, "heap": true,
	"mutex": true, "threadcreate": true,
}

func serveNamedProfile(w http.ResponseWriter, r *http.Request, name string) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	p := pprof.Lookup(name)
	if p == nil {
		serveError(w, http.StatusNotFound, fmt.Sprintf("unknown profile %q", name))
		return
	}
	if r.FormValue("seconds") != "" {
		if !cumulative[name] {
			serveError(w, http.StatusBadRequest, fmt.Sprintf("profile %q does not support seconds", name))
			return
		}
		d, err := secondsParam(r, 0)
		if err != nil {
			serveError(w, http.StatusBadRequest, err.Error())
			return
		}
		serveDelta(w, r, name, d)
		return
	}
	if name == "heap" && r.FormValue("gc") != "" && r.FormValue("gc") != "0" {
		runtime.GC()
	}
	debug, _ := strconv.Atoi(r.FormValue("debug"))
	if debug != 0 {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		setAttachment(w, name)
	}
	_ = p.WriteTo(w, debug) // the response has begun: a failed write has no one to tell
}

func serveCmdline(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, strings.Join(os.Args, "\x00")) // a client that hung up reads no error
}

// serveSymbol maps program counters to function names, for pprof tools that
// read legacy profiles; "0xPC+0xPC" in the query or the POST body.
func serveSymbol(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	var in io.Reader = strings.NewReader(r.URL.RawQuery)
	if r.Method == http.MethodPost {
		in = io.LimitReader(r.Body, 1<<20)
	}
	var out bytes.Buffer
	// pprof only checks that the count is not zero.
	out.WriteString("num_symbols: 1\n")
	sc := bufio.NewScanner(in)
	sc.Split(splitPlus)
	for sc.Scan() {
		pc, _ := strconv.ParseUint(sc.Text(), 0, 64)
		if pc == 0 {
			continue
		}
		if f := runtime.FuncForPC(uintptr(pc)); f != nil {
			fmt.Fprintf(&out, "%#x %s\n", pc, f.Name())
		}
	}
	_, _ = w.Write(out.Bytes()) // a client that hung up reads no error
}

// splitPlus is a bufio.SplitFunc for "+"-separated words.
func splitPlus(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexByte(data, '+'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// serveTrace writes a runtime/trace execution trace of ?seconds=N (default
// 1). It coexists with the spike watcher's flight recorder.
func serveTrace(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	d, err := secondsParam(r, time.Second)
	if err != nil {
		serveError(w, http.StatusBadRequest, err.Error())
		return
	}
	setAttachment(w, "trace")
	if err := trace.Start(w); err != nil {
		serveError(w, http.StatusInternalServerError, fmt.Sprintf("could not start tracing: %v", err))
		return
	}
	sleep(r, d)
	trace.Stop()
}

// secondsParam reads ?seconds=N as a positive duration, def when absent.
func secondsParam(r *http.Request, def time.Duration) (time.Duration, error) {
	s := r.FormValue("seconds")
	if s == "" {
		return def, nil
	}
	sec, err := strconv.ParseFloat(s, 64)
	if err != nil || sec <= 0 || sec > 3600 {
		return 0, fmt.Errorf("invalid seconds %q: want a number in (0, 3600]", s)
	}
	return time.Duration(sec * float64(time.Second)), nil
}

// sleep waits d or until the request ends (client gone, server shutting
// down), whichever is first.
func sleep(r *http.Request, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

func setAttachment(w http.ResponseWriter, name string) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
}

func serveError(w http.ResponseWriter, status int, msg string) {
	w.Header().Del("Content-Disposition")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Go-Pprof", "1")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}
