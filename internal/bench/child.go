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
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// Server is the parent's hold on the traffic between a child and the API
// server: in cachebench, a fault proxy (pkg/testkit/faults).
type Server interface {
	// EndWatches ends the live watch streams (watches and streaming lists) of
	// a resource with a 410 Gone and returns how many it ended.
	EndWatches(r ResourceRef) int
	// ResetCounts starts counting requests afresh.
	ResetCounts()
	// Counts returns the list-path requests for resource since ResetCounts.
	Counts(resource string) Requests
}

// ChildSpec is one mode to measure in a child process.
type ChildSpec struct {
	// Command runs `cachebench child` (or anything that calls ServeChild). Its
	// stdin, stdout and environment are set by RunChild; Stderr is kept.
	Command *exec.Cmd
	Mode    Mode
	// Resources are cached together in the child; usually there is one.
	Resources []ResourceRef
	// Config reaches the server through the proxy.
	Config *rest.Config
	Plan   Plan
	// Env is added to the child's environment (GOGC, GOMEMLIMIT).
	Env []string
	// Churn, when set, writes the changes of a re-list (Plan.Churn) to every
	// resource, directly to the server, while the child's re-list waits, and
	// returns what it wrote.
	Churn func(ctx context.Context, fraction float64) (dataset.Changes, error)
	// Write, when set, is the writer of the events phase (Plan.Events; see
	// MeasureSpec.Write), in this process: the child's CPU is then only its
	// cache's.
	Write func(ctx context.Context, step int) (EventsAnswer, error)
	// ServerPID, when not 0, is the API server's process, whose CPU time and
	// RSS are read for each window.
	ServerPID int
	// ServerMetrics, when set, reads the server's storage counters for the
	// resources, before and after each window.
	ServerMetrics func(ctx context.Context) (StorageCounts, error)
	// CPUProfile, when set, is a file for a CPU profile of the child's sync.
	CPUProfile string
	// AllocProfile, when set, is a file for an allocation profile of the
	// child's sync.
	AllocProfile string
	// Events, when set, receives the child's progress.
	Events func(Event)
}

// storageMarks are the server's storage counters read at the edges of the
// child's windows: before the child starts, when it asks for each re-list
// (its previous window has ended), once that re-list's changes are written
// (its window is about to start), and after its result.
type storageMarks struct {
	read   func(ctx context.Context) (StorageCounts, error)
	start  *StorageCounts
	asked  []*StorageCounts // index k-1: when re-list k was asked for
	ready  []*StorageCounts // index k-1: when re-list k was let go
	finish *StorageCounts
}

func (m *storageMarks) take(ctx context.Context) *StorageCounts {
	if m.read == nil {
		return nil
	}
	c, err := m.read(ctx)
	if err != nil {
		return nil
	}
	return &c
}

func diff(to, from *StorageCounts) *StorageCounts {
	if to == nil || from == nil {
		return nil
	}
	d := to.sub(*from)
	return &d
}

// attach fills in the server's cost of each window of res.
func (m *storageMarks) attach(res *Result, sampler *serverSampler) {
	at := func(sec float64) time.Time { return res.Started.Add(time.Duration(sec * float64(time.Second))) }
	cost := func(w Window) *ServerCost {
		if sampler == nil {
			return nil
		}
		c := sampler.cost(at(w.StartSeconds), at(w.EndSeconds))
		return &c
	}
	end := func(k int) *StorageCounts { // the mark after window k (0: the sync)
		if k < len(m.asked) {
			return m.asked[k]
		}
		return m.finish
	}
	res.InitialSync.Server = cost(res.InitialSync)
	res.Idle.Server = cost(res.Idle)
	res.Whole.Server = cost(res.Whole)
	if s := diff(end(0), m.start); s != nil && res.InitialSync.Server != nil {
		res.InitialSync.Server.Storage = s
	}
	if ev := res.Events; ev != nil {
		ev.Idle.Server = cost(ev.Idle)
		for i := range ev.Steps {
			ev.Steps[i].Window.Server = cost(ev.Steps[i].Window)
		}
	}
	for i := range res.Relists {
		w := &res.Relists[i].Window
		w.Server = cost(*w)
		if i < len(m.ready) {
			if s := diff(end(i+1), m.ready[i]); s != nil && w.Server != nil {
				w.Server.Storage = s
			}
		}
	}
}

// endWatchWait bounds how long the parent waits for the child's watch to be
// open before it can end it: after a LIST, the reflector opens its watch a
// moment after the sync.
const endWatchWait = 15 * time.Second

// watchAgeBeforeEnd is how long a watch is left open before the parent ends it
// with a 410. leanstore takes a 410 within a second of a watch's start for a
// server (or proxy) that expires every watch: it backs off and probes with a
// watch from the same resourceVersion, which works here (the proxy's 410 is
// one-shot), and resumes without the list the measurement forces.
const watchAgeBeforeEnd = 1100 * time.Millisecond

// RunChild runs one mode in a child process and returns its result, with the
// requests the server saw filled in. A failed child gives an error and, when
// the child got that far, a partial result.
func RunChild(ctx context.Context, spec ChildSpec, srv Server) (Result, error) {
	res := Result{Mode: spec.Mode.Name, Title: spec.Mode.Title, Resource: resourceNames(spec.Resources), Streaming: spec.Mode.Streaming}
	cc, err := clientConfigOf(spec.Config)
	if err != nil {
		return res, err
	}
	cmd := spec.Command
	stdin, stdout, err := prepareChild(cmd, spec)
	if err != nil {
		return res, err
	}
	marks := &storageMarks{read: spec.ServerMetrics}
	marks.start = marks.take(ctx)
	var sampler *serverSampler
	if spec.ServerPID != 0 {
		if sampler, err = startServerSampler(ctx, spec.ServerPID); err != nil {
			return res, fmt.Errorf("read the API server's process: %w", err)
		}
		defer sampler.stop()
	}
	srv.ResetCounts()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("start child for mode %s: %w", spec.Mode.Name, err)
	}
	send, closeStdin := lineSender(stdin)
	defer closeStdin()
	defer killOnCancel(ctx, cmd)()

	err = send(parentLine{Start: &startLine{
		Mode: spec.Mode.Name, Resources: spec.Resources, Config: cc, Plan: spec.Plan, CPUProfile: spec.CPUProfile,
		AllocProfile: spec.AllocProfile,
	}})
	var result *Result
	var childErr string
	if err == nil {
		result, childErr, err = converse(ctx, stdout, spec, srv, send, marks)
	}
	closeStdin()
	waitErr := cmd.Wait()
	marks.finish = marks.take(ctx)
	server := serverRequests(srv, spec.Resources)
	res.ListPath.Server = server
	switch {
	case result != nil:
		res = *result
		res.ListPath.Server = server
		marks.attach(&res, sampler)
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

// prepareChild sets the child's environment (with the mode's WatchListClient
// gate) and its pipes.
func prepareChild(cmd *exec.Cmd, spec ChildSpec) (io.WriteCloser, io.ReadCloser, error) {
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Env = append(cmd.Env, EnvWatchListClient+"="+strconv.FormatBool(spec.Mode.Streaming))
	// The child dies with the parent rather than measuring for nobody.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	return stdin, stdout, nil
}

// lineSender returns send, which writes one line to the child's stdin, and
// closeStdin; both are safe for concurrent use, and closeStdin for repeated
// use.
func lineSender(stdin io.WriteCloser) (send func(parentLine) error, closeStdin func()) {
	var mu sync.Mutex
	enc := json.NewEncoder(stdin)
	send = func(l parentLine) error {
		mu.Lock()
		defer mu.Unlock()
		return enc.Encode(l)
	}
	closeStdin = sync.OnceFunc(func() {
		mu.Lock()
		defer mu.Unlock()
		stdin.Close()
	})
	return send, closeStdin
}

// killOnCancel kills the child when ctx ends, until the returned stop is
// called; stop returns once the goroutine that watches ctx has ended.
func killOnCancel(ctx context.Context, cmd *exec.Cmd) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill()
		case <-done:
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// serverRequests sums the list-path requests the server saw for resources.
func serverRequests(srv Server, resources []ResourceRef) Requests {
	var server Requests
	for _, r := range resources {
		server = server.add(srv.Counts(r.Resource))
	}
	return server
}

// converse reads the child's lines until its result or error, ending watches
// and writing the changes when it asks for a re-list.
func converse(ctx context.Context, stdout io.Reader, spec ChildSpec, srv Server, send func(parentLine) error, marks *storageMarks) (*Result, string, error) {
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
		case l.EventsReady != nil:
			if err := answerEvents(ctx, spec, *l.EventsReady, send); err != nil {
				return nil, "", err
			}
		case l.RelistReady > 0:
			k := l.RelistReady
			if sleep(ctx, watchAgeBeforeEnd) != nil {
				return nil, "", ctx.Err()
			}
			marks.asked = append(marks.asked, marks.take(ctx))
			reply := relistReply{Index: k}
			for _, r := range spec.Resources {
				n := endWatches(ctx, srv, r)
				if n == 0 && reply.Error == "" {
					reply.Error = fmt.Sprintf("no open watch on %s to end within %s", r.Resource, endWatchWait)
				}
				reply.Ended += n
			}
			if f := spec.Plan.ChurnAt(k); reply.Error == "" && f > 0 && spec.Churn != nil {
				changes, err := spec.Churn(ctx, f)
				reply.Changes = changes
				if err != nil {
					reply.Error = fmt.Sprintf("write the changes before re-list %d: %v", k, err)
				}
			}
			marks.ready = append(marks.ready, marks.take(ctx))
			if err := send(parentLine{Relist: &reply}); err != nil {
				return nil, "", err
			}
		}
	}
	return nil, "", sc.Err()
}

// answerEvents runs a step of the events phase for the child (the writer's
// setup for step 0) and sends it what was written.
func answerEvents(ctx context.Context, spec ChildSpec, ask eventsAsk, send func(parentLine) error) error {
	reply := eventsReply{Step: ask.Step}
	if spec.Write == nil {
		reply.Error = "this run has no writer for the events phase"
	} else {
		var err error
		if reply.Answer, err = spec.Write(ctx, ask.Step); err != nil {
			reply.Error = err.Error()
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return send(parentLine{Events: &reply})
}

// endWatches ends the resource's watches, waiting for one to be open.
func endWatches(ctx context.Context, srv Server, r ResourceRef) int {
	deadline := time.Now().Add(endWatchWait)
	for {
		if n := srv.EndWatches(r); n > 0 || time.Now().After(deadline) {
			return n
		}
		if sleep(ctx, 50*time.Millisecond) != nil {
			return 0
		}
	}
}

func resourceNames(refs []ResourceRef) string {
	var names []string
	for _, r := range refs {
		names = append(names, r.Resource)
	}
	return strings.Join(names, ",")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
