package profile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/grafana/pyroscope-go"
)

// PyroscopeConfig configures continuous profiling to a Pyroscope server
// (WithPyroscope). The zero value of every optional field is the cheap,
// safe choice.
//
// What it costs: the CPU profiler runs all the time at 100 Hz, and CPU,
// heap and goroutine profiles are encoded and posted once per UploadRate. On
// an idle process holding 10,000 Pods (337 MiB live) that came to 1.1 ms of
// CPU per second and 2.3 MiB of heap; docs/profiling.md has the figures and
// the benchmark that measures them.
//
// While it runs, Pyroscope owns the process's CPU profiler:
// /debug/pprof/profile borrows it for the length of the request, and any
// other caller of runtime/pprof.StartCPUProfile gets "cpu profiling already
// in use". Only one Pyroscope profiler may run in a process.
type PyroscopeConfig struct {
	// ApplicationName names the service in Pyroscope, e.g. "my-operator".
	// Required.
	ApplicationName string
	// ServerAddress is the Pyroscope (or Grafana Cloud Profiles) base URL,
	// e.g. "http://pyroscope.monitoring:4040"; profiles are posted to
	// ServerAddress/ingest. Required. pyroscope-go lets the environment
	// variable PYROSCOPE_ADHOC_SERVER_ADDRESS override it.
	ServerAddress string
	// Tags are attached to every profile, e.g. {"namespace": ..., "pod": ...}.
	// Per-informer work is told apart by pprof labels instead (see Do), which
	// Pyroscope turns into tags of the samples they cover.
	Tags map[string]string
	// UploadRate is how often profiles are cut and sent; 0 means 15 seconds,
	// pyroscope-go's default. Shorter gives finer time resolution for more
	// uploads and more heap profile work.
	UploadRate time.Duration
	// BasicAuthUser and BasicAuthPassword authenticate to the server (Grafana
	// Cloud: the instance ID and an access token). Set both or neither.
	BasicAuthUser, BasicAuthPassword string
	// TenantID is sent as X-Scope-OrgID to a multi-tenant server.
	TenantID string
	// HTTPHeaders are added to every upload, e.g. a bearer token.
	HTTPHeaders map[string]string
	// ProfileTypes lists what to send. Empty means CPU, the four heap types
	// (in-use and allocated, space and objects: one heap profile yields all
	// four, so they cost the same as one) and goroutines, whose labels show
	// what each informer's goroutines are doing. Mutex and block profiles
	// are not on by default: they need runtime.SetMutexProfileFraction and
	// runtime.SetBlockProfileRate, which cost on every contended lock.
	ProfileTypes []pyroscope.ProfileType
	// ForceGC runs a garbage collection before a heap upload when none ran
	// since the previous one, so that every period has a fresh heap profile.
	// It is pyroscope-go's default, and it is off here: on a cache of
	// 10,000 Pods (337 MiB live) each forced GC took about 190 ms of CPU,
	// every UploadRate on an otherwise idle process: ten times the rest of
	// the profiler's cost (see docs/profiling.md).
	// Without it a period with no GC simply sends no heap profile; the heap
	// profile only changes at a GC anyway.
	ForceGC bool
}

// defaultProfileTypes is what PyroscopeConfig.ProfileTypes means when empty.
var defaultProfileTypes = []pyroscope.ProfileType{
	pyroscope.ProfileCPU,
	pyroscope.ProfileInuseSpace,
	pyroscope.ProfileInuseObjects,
	pyroscope.ProfileAllocSpace,
	pyroscope.ProfileAllocObjects,
	pyroscope.ProfileGoroutines,
}

// pyroscopeUploadTimeout bounds one upload, so that a dead server cannot hold
// a shutdown that is flushing.
const pyroscopeUploadTimeout = 10 * time.Second

func (c PyroscopeConfig) validate() error {
	if c.ApplicationName == "" {
		return errors.New("profile: pyroscope: ApplicationName is required")
	}
	u, err := url.Parse(c.ServerAddress)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("profile: pyroscope: ServerAddress %q is not an http(s) URL", c.ServerAddress)
	}
	if (c.BasicAuthUser == "") != (c.BasicAuthPassword == "") {
		return errors.New("profile: pyroscope: set both BasicAuthUser and BasicAuthPassword, or neither")
	}
	if c.UploadRate < 0 {
		return fmt.Errorf("profile: pyroscope: negative UploadRate %v", c.UploadRate)
	}
	return nil
}

// pyroscopeRunning guards the process-wide CPU profiler: a second profiler
// would fail to start it and send empty CPU profiles.
var pyroscopeRunning atomic.Bool

// ErrPyroscopeRunning is returned by Start when another Pyroscope profiler
// already runs in the process.
var ErrPyroscopeRunning = errors.New("profile: a pyroscope profiler is already running in this process")

// pyroscopeProfiler is a running pyroscope-go profiler with an HTTP client
// whose uploads Shutdown can cancel and whose connections it can close.
type pyroscopeProfiler struct {
	profiler      *pyroscope.Profiler
	cancelUploads context.CancelFunc
	transport     *http.Transport
}

func startPyroscope(cfg PyroscopeConfig, logger *slog.Logger) (*pyroscopeProfiler, error) {
	if !pyroscopeRunning.CompareAndSwap(false, true) {
		return nil, ErrPyroscopeRunning
	}
	types := cfg.ProfileTypes
	if len(types) == 0 {
		types = defaultProfileTypes
	}
	uploadCtx, cancel := context.WithCancel(context.Background())
	// pyroscope-go uploads from five goroutines; its own client allows as
	// many connections.
	transport := &http.Transport{Proxy: http.ProxyFromEnvironment, MaxConnsPerHost: 5}
	p, err := pyroscope.Start(pyroscope.Config{
		ApplicationName:   cfg.ApplicationName,
		ServerAddress:     cfg.ServerAddress,
		Tags:              cfg.Tags,
		UploadRate:        cfg.UploadRate,
		BasicAuthUser:     cfg.BasicAuthUser,
		BasicAuthPassword: cfg.BasicAuthPassword,
		TenantID:          cfg.TenantID,
		HTTPHeaders:       cfg.HTTPHeaders,
		ProfileTypes:      types,
		DisableGCRuns:     !cfg.ForceGC,
		Logger:            pyroscopeLogger{logger},
		HTTPClient: &cancelableClient{ctx: uploadCtx, client: &http.Client{
			Transport: transport,
			Timeout:   pyroscopeUploadTimeout,
			// As pyroscope-go's own client: a redirect would drop the
			// Authorization header and turn into a confusing 401.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}},
	})
	if err != nil {
		cancel()
		pyroscopeRunning.Store(false)
		return nil, fmt.Errorf("profile: start pyroscope for %q: %w", cfg.ApplicationName, err)
	}
	return &pyroscopeProfiler{profiler: p, cancelUploads: cancel, transport: transport}, nil
}

// stop sends what the current period collected and stops profiling. ctx
// bounds the last uploads: when it ends they are cancelled.
func (s *pyroscopeProfiler) stop(ctx context.Context) error {
	defer pyroscopeRunning.Store(false)
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		s.profiler.Flush(true)
	}()
	var err error
	select {
	case <-flushed:
	case <-ctx.Done():
		err = fmt.Errorf("profile: pyroscope: last upload cut short: %w", ctx.Err())
		s.cancelUploads()
		<-flushed
	}
	// The profiler queues its final CPU profile on Stop and its uploader may
	// exit before sending it; the flush above already sent the period.
	_ = s.profiler.Stop() // shutting down: the flush above reported what matters
	s.cancelUploads()
	s.transport.CloseIdleConnections()
	return err
}

// cancelableClient sends pyroscope-go's uploads with a context Shutdown
// cancels; pyroscope-go itself uses context.Background.
type cancelableClient struct {
	ctx    context.Context
	client *http.Client
}

func (c *cancelableClient) Do(req *http.Request) (*http.Response, error) {
	return c.client.Do(req.WithContext(c.ctx))
}

// pyroscopeLogger sends pyroscope-go's messages to slog: its start-up
// banner and per-upload chatter at debug, failed uploads at warn.
type pyroscopeLogger struct{ l *slog.Logger }

func (p pyroscopeLogger) Infof(format string, args ...any) {
	p.l.Debug("pyroscope: " + fmt.Sprintf(format, args...))
}

func (p pyroscopeLogger) Debugf(format string, args ...any) {
	p.l.Debug("pyroscope: " + fmt.Sprintf(format, args...))
}

func (p pyroscopeLogger) Errorf(format string, args ...any) {
	p.l.Warn("pyroscope: " + fmt.Sprintf(format, args...))
}
