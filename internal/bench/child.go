package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// Server is the parent's hold on the traffic between a child and the API
// server: in cachebench, a fault proxy (pkg/faults).
type Server interface {
	// EndWatches ends the live watch streams (watches and streaming lists) of
	// resource with a 410 Gone and returns how many it ended.
	EndWatches(resource string) int
	// ResetCounts starts counting requests afresh.
	ResetCounts()
	// Counts returns the list-path requests for resource since ResetCounts.
	Counts(resource string) Requests
}

// ChildSpec is one mode to measure in a child process.
type ChildSpec struct {
	// Command runs `cachebench child` (or anything that calls ServeChild). Its
	// stdin, stdout and environment are set by RunChild; Stderr is kept.
	Command   *exec.Cmd
	Mode      Mode
	Resource  schema.GroupVersionResource
	Namespace string
	// Config reaches the server through the proxy.
	Config *rest.Config
	Plan   Plan
	// Env is added to the child's environment (GOGC, GOMEMLIMIT).
	Env []string
	// Events, when set, receives the child's progress.
	Events func(Event)
}

// endWatchWait bounds how long the parent waits for the child's watch to be
// open before it can end it: after a LIST, the reflector opens its watch a
// moment after the sync.
const endWatchWait = 15 * time.Second

// RunChild runs one mode in a child process and returns its result, with the
// requests the server saw filled in. A failed child gives an error and, when
// the child got that far, a partial result.
func RunChild(ctx context.Context, spec ChildSpec, srv Server) (Result, error) {
	res := Result{Mode: spec.Mode.Name, Title: spec.Mode.Title, Resource: spec.Resource.Resource, Streaming: spec.Mode.Streaming}
	cc, err := clientConfigOf(spec.Config)
	if err != nil {
		return res, err
	}
	cmd := spec.Command
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Env = append(cmd.Env, EnvWatchListClient+"="+strconv.FormatBool(spec.Mode.Streaming))
	// The child dies with the parent rather than measuring for nobody.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return res, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return res, err
	}
	srv.ResetCounts()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("start child for mode %s: %w", spec.Mode.Name, err)
	}
	var stdinMu sync.Mutex
	enc := json.NewEncoder(stdin)
	send := func(l parentLine) error {
		stdinMu.Lock()
		defer stdinMu.Unlock()
		return enc.Encode(l)
	}
	closeStdin := sync.OnceFunc(func() {
		stdinMu.Lock()
		defer stdinMu.Unlock()
		stdin.Close()
	})
	defer closeStdin()

	// Stop the child when ctx ends.
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill()
		case <-done:
		}
	})
	defer wg.Wait()
	defer close(done)

	err = send(parentLine{Start: &startLine{
		Mode: spec.Mode.Name, Resource: spec.Resource, Namespace: spec.Namespace, Config: cc, Plan: spec.Plan,
	}})
	var result *Result
	var childErr string
	if err == nil {
		result, childErr, err = converse(ctx, stdout, spec, srv, send)
	}
	closeStdin()
	waitErr := cmd.Wait()
	res.ListPath.Server = srv.Counts(spec.Resource.Resource)
	switch {
	case result != nil:
		server := res.ListPath.Server
		res = *result
		res.ListPath.Server = server
		return res, nil
	case childErr != "":
		return res, fmt.Errorf("mode %s: %s", spec.Mode.Name, childErr)
	case ctx.Err() != nil:
		return res, ctx.Err()
	case err != nil:
		return res, fmt.Errorf("mode %s: %w", spec.Mode.Name, err)
	case waitErr != nil:
		return res, fmt.Errorf("mode %s: child %w", spec.Mode.Name, waitErr)
	}
	return res, fmt.Errorf("mode %s: child exited without a result", spec.Mode.Name)
}

// converse reads the child's lines until its result or error, ending watches
// when it asks for a re-list.
func converse(ctx context.Context, stdout io.Reader, spec ChildSpec, srv Server, send func(parentLine) error) (*Result, string, error) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 64<<20) // a result line carries the series
	for sc.Scan() {
		var l childLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, "", fmt.Errorf("child wrote %q: %w", truncate(sc.Text(), 200), err)
		}
		switch {
		case l.Result != nil:
			return l.Result, "", nil
		case l.Error != "":
			return nil, l.Error, nil
		case l.Event != nil && spec.Events != nil:
			spec.Events(*l.Event)
		case l.RelistReady > 0:
			reply := relistReply{Index: l.RelistReady}
			reply.Ended = endWatches(ctx, srv, spec.Resource.Resource)
			if reply.Ended == 0 {
				reply.Error = fmt.Sprintf("no open watch on %s to end within %s", spec.Resource.Resource, endWatchWait)
			}
			if err := send(parentLine{Relist: &reply}); err != nil {
				return nil, "", err
			}
		}
	}
	return nil, "", sc.Err()
}

// endWatches ends the resource's watches, waiting for one to be open.
func endWatches(ctx context.Context, srv Server, resource string) int {
	deadline := time.Now().Add(endWatchWait)
	for {
		if n := srv.EndWatches(resource); n > 0 || time.Now().After(deadline) {
			return n
		}
		if sleep(ctx, 50*time.Millisecond) != nil {
			return 0
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
