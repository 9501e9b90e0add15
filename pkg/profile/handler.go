package profile

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
)

// Handler serves Start's endpoints on a server the program already has: a
// mux of its own, controller-runtime's metrics server (see the
// controllerruntime module's profiling package), an admin port. It serves
// the /debug/pprof/ profiles, /debug/pprof/delta_heap, /debug/fgprof,
// /healthz and /readyz, and /metrics when WithMetrics asks for it. Mount it
// at each of Paths; it routes on the request's whole path, so it must not
// be mounted under a prefix that http.StripPrefix removes.
//
// A Handler starts nothing: no listener, no goroutine outside a request.
// Close ends the profiles in flight (a 30-second CPU profile would otherwise
// hold the host server's shutdown) and takes WithMetrics' collectors back.
type Handler struct {
	mux     *http.ServeMux
	paths   []string
	metrics *metricsRegistration // nil when /metrics is not served

	ctx    context.Context // ends at Close; requests end with it
	cancel context.CancelFunc
	once   sync.Once
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns a Handler configured by opts: WithReadiness and
// WithReadinessTimeout for /readyz, WithMetrics to serve /metrics from that
// registry (with the runtime and process collectors Start registers; without
// it there is no /metrics, the program serves its own), WithLogger. WithAddr
// and WithPyroscope are Start's: a Handler has no listener and runs no upload,
// so they are an error here.
func NewHandler(opts ...Option) (*Handler, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	if o.addrSet {
		return nil, errors.New("profile: NewHandler: WithAddr is Start's: a Handler serves on the program's own server")
	}
	if o.pyroscope != nil {
		return nil, errors.New("profile: NewHandler: WithPyroscope is Start's: a Handler runs no upload (call Start for it)")
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	return newHandler(o, o.registerer != nil)
}

// newHandler builds the Handler of o; withMetrics registers the runtime
// collectors with o's registry (a new one when nil) and serves /metrics.
func newHandler(o options, withMetrics bool) (*Handler, error) {
	h := &Handler{paths: []string{"/debug/pprof/", "/debug/fgprof", "/healthz", "/readyz"}}
	var metrics http.Handler
	if withMetrics {
		m, err := registerMetrics(o.registerer)
		if err != nil {
			return nil, err
		}
		h.metrics, metrics = m, m.handler
		h.paths = append(h.paths, "/metrics")
	}
	h.mux = routes(o, metrics)
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h, nil
}

// Paths returns the patterns to mount the Handler at, each with the Handler
// itself: "/debug/pprof/" (every profile below it), "/debug/fgprof",
// "/healthz", "/readyz", and "/metrics" when WithMetrics was given.
//
//	for _, p := range h.Paths() {
//		mux.Handle(p, h)
//	}
func (h *Handler) Paths() []string { return slices.Clone(h.paths) }

// ServeHTTP serves one of Paths. A request's context also ends at Close, so
// that a long profile stops there.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.ctx.Err() != nil {
		http.Error(w, "profile: the handler is closed", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(h.ctx, cancel)
	defer stop()
	h.mux.ServeHTTP(w, r.WithContext(ctx))
}

// Close ends the profiles in flight and, with WithMetrics, unregisters the
// collectors it registered and puts back the stock ones it replaced. Later
// requests get 503. Calling it again does nothing.
func (h *Handler) Close() {
	h.once.Do(func() {
		h.cancel()
		if h.metrics != nil {
			h.metrics.unregister()
		}
	})
}
