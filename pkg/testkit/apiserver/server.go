package apiserver

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The identities in the server's kubeconfig.
const (
	// AdminUser is in system:masters: it may do everything.
	AdminUser = "cachetune-admin"
	// RestrictedUser is authenticated but bound to no role: RBAC denies it every
	// resource until a test grants one.
	RestrictedUser = "cachetune-restricted"
)

// Options configure Start. The zero value starts a default server.
type Options struct {
	// ExtraArgs are appended to kube-apiserver's command line and override its
	// defaults, for example "--feature-gates=WatchList=false".
	ExtraArgs []string
	// Progress receives build progress and start-up lines; nil discards them.
	Progress io.Writer
	// StartTimeout bounds the start once the binary exists (default 2 minutes).
	StartTimeout time.Duration
	// QPS and Burst are set on the returned rest.Configs (defaults 1000 and 2000):
	// client-go's own default of 5 QPS would make seeding a dataset take an hour.
	QPS   float32
	Burst int
	// GOGC is the server process's GOGC (default 300, unless GOGC is set in
	// the environment): the server and its etcd allocate heavily while a dataset
	// is written; seeding 3,000 Pods into a fresh server ran at 86 Pods/s with
	// Go's default of 100 and at 106 Pods/s with 300 (cachebench seed).
	GOGC string
}

// Server is a running kube-apiserver with an embedded etcd, in a child process.
type Server struct {
	// Config authenticates as AdminUser.
	Config *rest.Config
	// RestrictedConfig authenticates as RestrictedUser.
	RestrictedConfig *rest.Config
	// Kubeconfig is the path of a kubeconfig with both identities; its current
	// context is the admin.
	Kubeconfig string
	// Host is the server's https URL on 127.0.0.1.
	Host string
	// PID is the server process.
	PID int
	// StartupTime is how long the process took to become ready.
	StartupTime time.Duration

	cmd      *exec.Cmd
	waitErr  chan error
	dir      string
	stopOnce sync.Once
	stopErr  error
	lazyClientset
}

// ready is the line the server prints on stdout when /readyz answers.
type ready struct {
	Host       string `json:"host"`
	Kubeconfig string `json:"kubeconfig"`
	PID        int    `json:"pid"`
}

// Start finds or builds the server binary (see Binary), starts it and returns once
// it is ready. Call Stop to end it; the process also ends when its parent dies.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := Binary(ctx, opts.Progress)
	if err != nil {
		return nil, err
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	dir, err := os.MkdirTemp("", "cachetune-apiserver-")
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "apiserver.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer logFile.Close()

	c := serverCommand(bin, dir, logFile, opts)
	stdout, err := c.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	start := time.Now()
	if err := c.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{cmd: c, dir: dir, PID: c.Process.Pid}

	lines := readyLine(stdout)
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	s.waitErr = exited

	r, err := s.awaitReady(ctx, lines, logPath, opts.StartTimeout)
	if err != nil {
		_ = s.Stop() // start-up failed: its error is the one returned
		return nil, err
	}
	s.StartupTime = time.Since(start)
	s.Host = r.Host
	s.Kubeconfig = r.Kubeconfig
	if s.Config, err = configFor(r.Kubeconfig, AdminUser, opts); err == nil {
		s.RestrictedConfig, err = configFor(r.Kubeconfig, RestrictedUser, opts)
	}
	if err != nil {
		_ = s.Stop() // start-up failed: its error is the one returned
		return nil, err
	}
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "kube-apiserver ready at %s in %s\n", s.Host, s.StartupTime.Round(time.Millisecond))
	}
	return s, nil
}

// serverCommand is the server's command line in dir, its stderr going to
// logFile.
func serverCommand(bin, dir string, logFile *os.File, opts Options) *exec.Cmd {
	args := append([]string{"--dir", filepath.Join(dir, "data")}, "--")
	args = append(args, opts.ExtraArgs...)
	c := exec.Command(bin, args...)
	c.Stderr = logFile
	c.Env = os.Environ()
	if gogc := opts.GOGC; gogc != "" || os.Getenv("GOGC") == "" {
		c.Env = append(c.Env, "GOGC="+cmp.Or(gogc, "300"))
	}
	// The server stops (and cleans up) when the thread that started it dies.
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	return c
}

// readyLine delivers the first ready line the server prints on stdout, then
// drains stdout so that the server never blocks on a full pipe.
func readyLine(stdout io.Reader) <-chan ready {
	lines := make(chan ready, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var r ready
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.Host != "" {
				lines <- r
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	return lines
}

// awaitReady waits for the server's ready line, or for it to exit, the
// time-out or ctx; the errors of a failed start carry the log's last lines.
func (s *Server) awaitReady(ctx context.Context, lines <-chan ready, logPath string, timeout time.Duration) (ready, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-lines:
		return r, nil
	case err := <-s.waitErr:
		s.waitErr <- err // for Stop
		return ready{}, fmt.Errorf("kube-apiserver exited during start-up (%v); last log lines:\n%s", err, logTail(logPath, 30))
	case <-timer.C:
		return ready{}, fmt.Errorf("kube-apiserver not ready after %s; last log lines:\n%s", timeout, logTail(logPath, 30))
	case <-ctx.Done():
		return ready{}, ctx.Err()
	}
}

func configFor(kubeconfig, context string, opts Options) (*rest.Config, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: context},
	).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s context %s: %w", kubeconfig, context, err)
	}
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	if cfg.QPS == 0 {
		cfg.QPS = 1000
	}
	if cfg.Burst == 0 {
		cfg.Burst = 2000
	}
	return cfg, nil
}

// Stop ends the server with SIGTERM (SIGKILL after 30 s), waits for the process to
// exit and removes its working directory. It is safe to call more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		var err error
		select {
		case err = <-s.waitErr:
		case <-time.After(30 * time.Second):
			// Kill the whole process group, then reap.
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			err = <-s.waitErr
			s.stopErr = errors.New("kube-apiserver did not stop within 30s of SIGTERM and was killed")
		}
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) && s.stopErr == nil {
			s.stopErr = err
		}
		if rmErr := os.RemoveAll(s.dir); rmErr != nil && s.stopErr == nil {
			s.stopErr = rmErr
		}
	})
	return s.stopErr
}

// Dir is the server's working directory (etcd data, certificates, log). It is
// removed by Stop.
func (s *Server) Dir() string { return s.dir }

func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
