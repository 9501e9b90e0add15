package profile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// shutdownGrace bounds the shutdown that starts when Start's context ends,
// since nobody passes it a context of its own: long enough to flush a last
// Pyroscope upload, short enough not to hold a terminating pod.
const shutdownGrace = 10 * time.Second

// Server serves one process's profiling, metrics and health endpoints, and
// runs its Pyroscope upload when configured. Create it with Start; it stops
// when Start's context ends or Shutdown is called, whichever comes first.
type Server struct {
	addr    string
	http    *http.Server
	logger  *slog.Logger
	handler *Handler // the endpoints; closing it ends long profiles in flight

	served    chan struct{} // closed when http.Server.Serve returned
	stopWatch func() bool   // unregisters the context.AfterFunc
	pyroscope *pyroscopeProfiler

	once sync.Once
	err  error
}

// Start listens on the configured address and serves, on a mux of its own
// (http.DefaultServeMux is left alone):
//
//	/debug/pprof/             index, and every runtime/pprof profile by name
//	/debug/pprof/profile      CPU profile (?seconds=N, default 30)
//	/debug/pprof/trace        execution trace (?seconds=N, default 1)
//	/debug/pprof/delta_heap   heap growth over ?seconds=N (default 30)
//	/debug/pprof/cmdline, /debug/pprof/symbol
//	/debug/fgprof             wall-clock profile: on-CPU and off-CPU time
//	/metrics                  Prometheus, with Go runtime/metrics histograms
//	/healthz, /readyz         liveness, and readiness from WithReadiness checks
//
// To serve them on a server the program already has, use NewHandler.
//
// Start returns once the listener is bound, so Addr is valid and a request
// sent afterwards is served. The server stops when ctx ends or Shutdown is
// called; either way no goroutine of it is left once Shutdown returns.
func Start(ctx context.Context, opts ...Option) (*Server, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}

	h, err := newHandler(o, true)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("profile: listen on %q: %w", o.addr, err)
	}
	var pyro *pyroscopeProfiler
	if o.pyroscope != nil {
		if pyro, err = startPyroscope(*o.pyroscope, o.logger); err != nil {
			ln.Close()
			h.Close()
			return nil, err
		}
	}

	s := &Server{
		addr:      ln.Addr().String(),
		logger:    o.logger,
		handler:   h,
		served:    make(chan struct{}),
		pyroscope: pyro,
	}
	// Requests keep ctx's values but not its cancellation: ctx ending
	// triggers Shutdown, which closes the handler first, so that a 30-second
	// CPU or wall-clock profile in flight ends at once instead of holding the
	// shutdown.
	reqCtx := context.WithoutCancel(ctx)
	s.http = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		ErrorLog:          slog.NewLogLogger(o.logger.Handler(), slog.LevelWarn),
	}
	go func() {
		defer close(s.served)
		if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("profile: server stopped", "addr", s.addr, "err", err)
		}
	}()
	s.stopWatch = context.AfterFunc(ctx, func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = s.stop(ctx)
	})
	return s, nil
}

// Addr returns the address the server listens on, with the port it bound
// when WithAddr asked for port 0.
func (s *Server) Addr() string { return s.addr }

// Shutdown stops serving, ends profiles in flight, flushes and stops the
// Pyroscope upload, and puts back any collectors it replaced in a shared
// Prometheus registry. ctx bounds the wait for open requests and the last
// upload; when it expires, connections are closed and uploads cancelled.
// Later calls, and a call racing the one Start's context triggered, wait for
// the first and return its result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopWatch()
	return s.stop(ctx)
}

// stop runs the shutdown once; Start's context.AfterFunc calls it directly.
func (s *Server) stop(ctx context.Context) error {
	s.once.Do(func() { s.err = s.shutdown(ctx) })
	return s.err
}

func (s *Server) shutdown(ctx context.Context) error {
	// Closing the handler ends the profiles in flight and puts back any
	// collectors it replaced.
	s.handler.Close()
	var errs []error
	if err := s.http.Shutdown(ctx); err != nil {
		// Handlers honour the cancelled request context; what is left is a
		// client slow to read. Close its connection rather than wait.
		errs = append(errs, fmt.Errorf("profile: shutdown %s: %w", s.addr, err))
		s.http.Close()
	}
	<-s.served
	if s.pyroscope != nil {
		if err := s.pyroscope.stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
