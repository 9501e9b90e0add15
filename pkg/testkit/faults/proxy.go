package faults

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Proxy is a plain-HTTP reverse proxy in front of a Kubernetes API server that
// applies faults to the requests its rules select, and counts every request.
// Its methods are safe for concurrent use.
type Proxy struct {
	url       string
	server    *http.Server
	transport *http.Transport
	rp        *httputil.ReverseProxy
	ctx       context.Context // every request's context derives from it
	cancel    context.CancelFunc
	served    chan struct{} // closed when Serve returns
	// anonymous is set by WithUpstreamCredentials: clients send no
	// credentials, the proxy adds upstream's.
	anonymous bool

	mu       sync.Mutex
	closed   bool
	handlers sync.WaitGroup
	rules    []*ruleState
	streams  map[*streamBody]request
	counts   Counts
}

// Option configures Start.
type Option func(*options)

type options struct {
	upstreamCredentials bool
}

// WithUpstreamCredentials makes the proxy authenticate to the server as
// upstream's user, with whatever credentials upstream holds (a client
// certificate, a bearer token or token file, an exec or auth-provider plugin,
// basic auth, impersonation), the way kubectl proxy does. Its clients then
// need no credentials: Config gives them none, and every request reaches the
// server as upstream's user. This is the way to put the proxy in front of a
// cluster whose kubeconfig authenticates with a client certificate (what
// kind, minikube and kubeadm write), which cannot pass through a plain-HTTP
// proxy otherwise.
func WithUpstreamCredentials() Option {
	return func(o *options) { o.upstreamCredentials = true }
}

// Start starts a proxy on 127.0.0.1 (a free port) that forwards to the API
// server upstream points at. By default it connects upstream with upstream's
// TLS settings but without its credentials (bearer token, basic auth, client
// certificate, exec or auth provider): each client's own Authorization header
// passes through, so the server sees the client's identity, not the proxy's.
// Identities that authenticate by client certificate cannot pass through a
// plain-HTTP proxy that way; WithUpstreamCredentials makes the proxy
// authenticate as upstream's user instead.
//
// Clients reach the proxy with Config. Close stops it.
func Start(upstream *rest.Config, opts ...Option) (*Proxy, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	target, err := url.Parse(upstream.Host)
	if err != nil {
		return nil, fmt.Errorf("parse upstream host %q: %w", upstream.Host, err)
	}
	if target.Scheme == "" {
		target.Scheme = "https"
	}
	tlsSource := upstream
	if !o.upstreamCredentials {
		tlsSource = rest.AnonymousClientConfig(upstream) // keeps TLS, drops credentials
		tlsSource.CertData, tlsSource.KeyData, tlsSource.CertFile, tlsSource.KeyFile = nil, nil, "", ""
	}
	// With upstream's credentials this holds its client certificate, or the
	// callback of an exec plugin that returns one.
	tlsConfig, err := rest.TLSConfigFor(tlsSource)
	if err != nil {
		return nil, fmt.Errorf("upstream TLS: %w", err)
	}
	// The proxy owns its transport rather than taking client-go's shared one
	// (rest.TransportFor caches transports per TLS configuration), so that
	// Close can close its connections without touching anyone else's.
	transport := &http.Transport{
		TLSClientConfig: tlsConfig,
		// HTTP/1.1 upstream: one connection per request in flight, so that a
		// cancelled stream closes its own connection at once and Close leaves
		// no HTTP/2 connection behind that an ending stream still held.
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		MaxIdleConnsPerHost: 100,
		IdleConnTimeout:     90 * time.Second,
		// The proxy reads watch frames, so it wants bodies as encoded, not
		// gzipped; it also drops the client's Accept-Encoding (see rewrite).
		DisableCompression: true,
	}
	var upstreamRT http.RoundTripper = transport
	if o.upstreamCredentials {
		// The other half of rest.TransportFor, over the proxy's own transport:
		// bearer tokens (refreshed from a token file), exec and auth-provider
		// plugins, basic auth, impersonation.
		if upstreamRT, err = rest.HTTPWrappersForConfig(upstream, transport); err != nil {
			return nil, fmt.Errorf("upstream credentials: %w", err)
		}
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		url:       "http://" + l.Addr().String(),
		anonymous: o.upstreamCredentials,
		transport: transport,
		ctx:       ctx,
		cancel:    cancel,
		served:    make(chan struct{}),
		streams:   map[*streamBody]request{},
		counts:    newCounts(time.Now()),
	}
	quiet := log.New(io.Discard, "", 0)
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
			pr.Out.Header.Del("Accept-Encoding")
			if p.anonymous {
				// Every request is upstream's user's, never a client's.
				pr.Out.Header.Del("Authorization")
			}
			if c, ok := pr.In.Context().Value(callKey{}).(*call); ok && c.fault.kind == answerJSON {
				accept := pr.Out.Header.Get("Accept")
				c.askedProtobuf = accept == "" || strings.Contains(accept, "protobuf")
				pr.Out.Header.Set("Accept", jsonOnly(accept))
			}
		},
		Transport:      upstreamRT,
		FlushInterval:  -1, // stream watch events as they come, never buffer
		ModifyResponse: p.modifyResponse,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.WriteHeader(http.StatusBadGateway)
		},
		ErrorLog: quiet,
	}
	p.server = &http.Server{
		Handler:     p,
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    quiet,
	}
	go func() {
		defer close(p.served)
		_ = p.server.Serve(l)
	}()
	return p, nil
}

// URL is the proxy's base URL, http://127.0.0.1:port.
func (p *Proxy) URL() string { return p.url }

// Config returns a copy of c that talks to the API server through the proxy:
// Host is the proxy's URL and the TLS settings are cleared, while the bearer
// token (or token file) is kept, so requests keep c's identity. With
// WithUpstreamCredentials every credential is cleared as well: the proxy
// authenticates each request itself.
func (p *Proxy) Config(c *rest.Config) *rest.Config {
	out := rest.CopyConfig(c)
	if p.anonymous {
		out.BearerToken, out.BearerTokenFile, out.Username, out.Password = "", "", "", ""
		out.Impersonate = rest.ImpersonationConfig{}
		out.AuthProvider, out.AuthConfigPersister, out.ExecProvider = nil, nil, nil
	}
	out.Host = p.url
	out.TLSClientConfig = rest.TLSClientConfig{}
	out.Transport = nil
	out.Proxy = nil
	return out
}

// Close stops the proxy: it ends every request in flight (stalled ones too),
// waits for their handlers to return and closes its upstream connections.
// No goroutine of the proxy is left when it returns.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()

	p.cancel()
	err := p.server.Close()
	<-p.served
	p.handlers.Wait()
	p.transport.CloseIdleConnections()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// AddRule adds r after the rules already there and returns a function that
// removes it again (calling it twice is harmless). Requests already in flight
// keep the fault they were given.
func (p *Proxy) AddRule(r Rule) (remove func()) {
	rs := &ruleState{Rule: r}
	p.mu.Lock()
	p.rules = append(p.rules, rs)
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.rules = slices.DeleteFunc(p.rules, func(x *ruleState) bool { return x == rs })
	}
}

// EndWatches acts at once on the live watch streams (Watch and WatchList)
// that m selects, at their next frame boundary, and returns how many it acted
// on:
//
//   - Gone (or GoneAfterEvents) writes an ERROR event with a 410 Expired
//     Status and ends the stream, as the server does when the watch's
//     resourceVersion has been compacted; Status(code, _) does the same with
//     that code.
//   - Cut aborts the connection; Truncate ends the stream cleanly, as the
//     server's watch time-out does.
//   - Malformed writes a frame that cannot be decoded.
//   - Stall stops forwarding events but keeps the connection open.
//
// Streams whose encoding has no known framing (neither JSON nor protobuf)
// are not counted.
func (p *Proxy) EndWatches(m Match, f Fault) int {
	return p.endWatches(m, f, nil)
}

// EndWatchesCounted is EndWatches with a Counter of its own: Fired is the
// number of streams it acted on, as EndWatches returns, and Acted grows as
// each of them reaches the frame boundary where the fault takes effect (a
// stream that closes first never does).
func (p *Proxy) EndWatchesCounted(m Match, f Fault) *Counter {
	c := &Counter{}
	p.endWatches(m, f, c)
	return c
}

func (p *Proxy) endWatches(m Match, f Fault, c *Counter) int {
	p.mu.Lock()
	var hit []*streamBody
	for s, r := range p.streams {
		if m.matches(r) {
			hit = append(hit, s)
		}
	}
	p.counts.Faulted += len(hit)
	p.mu.Unlock()
	for _, s := range hit {
		c.fire()
		s.inject(f, c.actOnce())
	}
	return len(hit)
}

// Counts returns a copy of the counts since Start or the last ResetCounts.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts.clone()
}

// ResetCounts starts counting afresh from now; PerSecond restarts at second 0.
func (p *Proxy) ResetCounts() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts = newCounts(time.Now())
}

// call is what ServeHTTP hands to modifyResponse about one request.
type call struct {
	req     request
	fault   Fault
	client  context.Context
	abortUp context.CancelFunc
	// acted counts the fault as having taken effect on this request (see
	// Counter.Acted); it does nothing without a Counter.
	acted func()
	// askedProtobuf is set when AnswerJSON rewrote an Accept header that
	// asked for protobuf.
	askedProtobuf bool
}

type callKey struct{}

// ServeHTTP counts the request, picks its fault, and answers it: statuses and
// Gone on plain requests without contacting the server, everything else by
// forwarding and shaping the response.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := describe(r)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	p.handlers.Add(1)
	defer p.handlers.Done()
	p.counts.add(req, time.Now())
	var f Fault
	acted := func() {}
	for _, rs := range p.rules {
		if rs.matches(req) && rs.fire() {
			f = rs.Fault
			if !f.countedWhenActing() {
				p.counts.Faulted++
			}
			rs.Counter.fire()
			acted = rs.Counter.actOnce()
			break
		}
	}
	p.mu.Unlock()

	switch {
	case f.kind == status,
		(f.kind == gone || f.kind == goneAfterEvents) && !req.Verb.streaming():
		acted()
		n := writeStatus(w, statusFor(f, req))
		p.addBytes(n)
		return
	}

	upCtx, abortUp := context.WithCancel(r.Context())
	defer abortUp()
	c := &call{req: req, fault: f, client: r.Context(), abortUp: abortUp, acted: acted}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(upCtx, callKey{}, c)))
}

func (p *Proxy) addBytes(n int) {
	p.mu.Lock()
	p.counts.BytesToClient += int64(n)
	p.mu.Unlock()
}

// faulted counts a request whose Cut or Truncate has just acted.
func (p *Proxy) faulted() {
	p.mu.Lock()
	p.counts.Faulted++
	p.mu.Unlock()
}

// modifyResponse wraps the upstream body with the request's fault: frame by
// frame for a watch stream, byte by byte otherwise, and counts what passes.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	c := resp.Request.Context().Value(callKey{}).(*call)
	enc := encodingOf(resp.Header.Get("Content-Type"))
	body := resp.Body
	lengthChanges := false

	if c.fault.kind == answerJSON && c.askedProtobuf && enc == encJSON {
		c.acted()
	}
	if c.req.Verb.streaming() && resp.StatusCode == http.StatusOK && enc != encOther {
		sb := newStreamBody(body, enc, c.req, c.fault, c.client, c.abortUp, c.acted)
		p.mu.Lock()
		p.streams[sb] = c.req
		p.mu.Unlock()
		body = &unregister{ReadCloser: sb, done: func() {
			p.mu.Lock()
			delete(p.streams, sb)
			p.mu.Unlock()
		}}
	} else if c.fault.kind == malformed {
		_ = body.Close()
		body = io.NopCloser(bytes.NewReader(garbageBody(enc)))
		lengthChanges = true
		c.acted()
	} else if c.fault.kind == truncateAfterItems {
		full, err := io.ReadAll(body)
		_ = body.Close()
		if err != nil {
			return err
		}
		cut := cutAfterItems(full, enc, c.fault.n)
		if cut < len(full) {
			c.acted()
		}
		body = io.NopCloser(bytes.NewReader(full[:cut]))
		lengthChanges = true
	}
	switch c.fault.kind {
	case stall, cut, truncate, slow:
		body = &shapedBody{ReadCloser: body, fault: c.fault, client: c.client, hit: p.faulted, acted: c.acted}
		lengthChanges = lengthChanges || c.fault.kind == truncate
	}
	if lengthChanges {
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
	}
	resp.Body = &countingBody{ReadCloser: body, add: p.addBytes}
	return nil
}

// jsonOnly rewrites an Accept header so that the server answers JSON: every
// protobuf media type becomes JSON with the same parameters (a metadata-only
// client's ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1" is kept, as a
// server without protobuf honours it in JSON).
func jsonOnly(accept string) string {
	if accept == "" {
		return "application/json"
	}
	out := strings.ReplaceAll(accept, "application/vnd.kubernetes.protobuf;stream=watch", "application/json")
	out = strings.ReplaceAll(out, "application/vnd.kubernetes.protobuf", "application/json")
	return out
}

// unregister runs done once when the body is closed.
type unregister struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (u *unregister) Close() error {
	u.once.Do(u.done)
	return u.ReadCloser.Close()
}
