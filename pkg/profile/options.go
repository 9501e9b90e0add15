package profile

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

// Option configures Start or NewHandler.
type Option func(*options)

type options struct {
	addr             string
	addrSet          bool // WithAddr was given: an error for NewHandler
	registerer       prometheus.Registerer
	readiness        []readinessCheck
	readinessTimeout time.Duration
	pyroscope        *PyroscopeConfig
	logger           *slog.Logger
}

// readinessCheck is one named check behind /readyz.
type readinessCheck struct {
	name  string
	check func(context.Context) error
}

// defaults are every default Start uses, in one place.
func defaults() options {
	return options{
		// Loopback: profiles expose memory contents and cost CPU to produce,
		// so they are not served to the network unless asked for.
		addr:             "127.0.0.1:6060",
		readinessTimeout: time.Second,
		// The library's one default logger: klog's (see WithLogger).
		logger: slog.New(logr.ToSlogHandler(klog.Background())),
	}
}

// validate returns the first option out of range, naming it: Start fails
// with it rather than serve with a setting it was not given.
func (o *options) validate() error {
	if o.readinessTimeout <= 0 {
		return fmt.Errorf("profile: WithReadinessTimeout: must be positive, got %s", o.readinessTimeout)
	}
	for _, c := range o.readiness {
		if c.check == nil {
			return fmt.Errorf("profile: WithReadiness %q: check is nil", c.name)
		}
	}
	if o.pyroscope != nil {
		return o.pyroscope.validate()
	}
	return nil
}

// WithAddr sets the address to listen on, in net.Listen's "host:port" form.
// The default is 127.0.0.1:6060. A port of 0 picks a free port; Server.Addr
// reports the one bound. Use ":6060" to listen on every interface, for
// example so that a Prometheus in the cluster can scrape /metrics.
func WithAddr(addr string) Option {
	return func(o *options) { o.addr, o.addrSet = addr, true }
}

// WithMetrics registers the runtime and process collectors with r and
// serves /metrics from it, so that a process keeps one registry for its own
// metrics and these. r must also be a prometheus.Gatherer, as a
// *prometheus.Registry is (Start fails otherwise). Pass
// prometheus.DefaultRegisterer to share the global registry: its stock Go
// and process collectors are replaced while the server runs (they would
// collide with the richer ones registered here) and put back at Shutdown. A
// Go collector registered with options of its own makes Start fail: register
// NewRuntimeCollector in its place instead.
//
// Without this option the server uses a registry of its own.
func WithMetrics(r prometheus.Registerer) Option {
	return func(o *options) { o.registerer = r }
}

// WithReadiness adds a named check to /readyz. The endpoint answers 200 when
// every check returns nil and 503 naming each failing check otherwise; a
// typical check reports whether the process's informers have synced.
// Adding a check with a name already used replaces it.
func WithReadiness(name string, check func(context.Context) error) Option {
	return func(o *options) {
		for i, c := range o.readiness {
			if c.name == name {
				o.readiness[i].check = check
				return
			}
		}
		o.readiness = append(o.readiness, readinessCheck{name: name, check: check})
	}
}

// WithReadinessTimeout bounds how long /readyz waits for its checks; a check
// still running when it expires counts as failed. The default is 1 second,
// the kubelet's default probe timeout; keep it at or below the probe's
// timeoutSeconds, or the kubelet gives up before the answer.
func WithReadinessTimeout(d time.Duration) Option {
	return func(o *options) { o.readinessTimeout = d }
}

// WithPyroscope streams profiles to a Pyroscope server while the server runs;
// see PyroscopeConfig for what it sends and what it costs.
func WithPyroscope(cfg PyroscopeConfig) Option {
	return func(o *options) { o.pyroscope = &cfg }
}

// WithLogger sets where the server reports errors that have no caller to
// return to: a failed Pyroscope upload, a listener that stopped. It is a
// logr.Logger, as in client-go and controller-runtime (slog through
// logr.FromSlogHandler). The default is klog.Background(), as in
// pkg/leanstore and pkg/reconcile: client-go's own components log there, so
// one klog.SetLogger routes all of them to a program's logger.
// logr.Discard() logs nothing.
func WithLogger(l logr.Logger) Option {
	return func(o *options) { o.logger = slog.New(logr.ToSlogHandler(l)) }
}
