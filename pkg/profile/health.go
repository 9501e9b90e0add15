package profile

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// serveHealthz is the liveness endpoint: the process answers, so it is alive.
// Readiness belongs in /readyz; failing liveness on a slow dependency would
// only get the pod restarted.
func serveHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n") // a prober that hung up reads no error
}

// readyzHandler runs every check in parallel, each bounded by timeout, and
// answers 200 when all pass, 503 otherwise. The body lists each check the way
// kube-apiserver's /readyz?verbose does, so the failing name is in the probe
// event:
//
//	[+]informers ok
//	[-]leader failed: not the leader
//	readyz check failed
func readyzHandler(checks []readinessCheck, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()

		// Buffered: a check that ignores its context and returns late still
		// has somewhere to send, and its goroutine ends when it does.
		results := make([]chan error, len(checks))
		for i, c := range checks {
			results[i] = make(chan error, 1)
			go func() { results[i] <- runCheck(ctx, c.check) }()
		}
		var b strings.Builder
		failed := false
		for i, c := range checks {
			var err error
			select {
			case err = <-results[i]:
			case <-ctx.Done():
				// A check that answered while an earlier one timed out
				// still counts.
				select {
				case err = <-results[i]:
				default:
					err = fmt.Errorf("no answer within %v", timeout)
				}
			}
			if err != nil {
				failed = true
				fmt.Fprintf(&b, "[-]%s failed: %v\n", c.name, err)
			} else {
				fmt.Fprintf(&b, "[+]%s ok\n", c.name)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if failed {
			b.WriteString("readyz check failed\n")
			w.WriteHeader(http.StatusServiceUnavailable)
		} else {
			b.WriteString("ok\n")
		}
		_, _ = io.WriteString(w, b.String()) // a prober that hung up reads no error
	})
}

// runCheck calls check, turning a panic into a failure: a buggy check runs
// on a goroutine of its own, where a panic would end the process.
func runCheck(ctx context.Context, check func(context.Context) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return check(ctx)
}
