// Package retry is the client layer of cachetune's error handling: an
// http.RoundTripper that retries 429, 503 and 504, and time-outs for single
// API calls in reconcile code.
//
// The guide that uses it: docs/errors-and-backoff.md.
//
//	cfg := rest.CopyConfig(base)
//	if err := retry.Wrap(cfg); err != nil { // defaults: 4 attempts, 30 s, backoff 500 ms..8 s
//		return err // an option out of range
//	}
//	cs := kubernetes.NewForConfigOrDie(cfg)
//
//	err := retry.CallWithTimeout(ctx, 10*time.Second, "get configmap "+key, func(ctx context.Context) error {
//		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
//		return err
//	})
//	// On time-out err is a *failure.Error (client/Timeout, transient) naming the call.
//
// # What the transport retries
//
// Only 429 Too Many Requests, 503 Service Unavailable and 504 Gateway
// Timeout: answers that say the server did not do the work and may later.
// Other 5xx, network errors and time-outs belong to the watcher's and the
// reconciler's backoff (package failure classifies them), and 4xx are not
// retried at all.
//
// Only requests it can send again: no body, or a body with GetBody (client-go
// always sets it), whatever the method. Never a watch (watch=true or a
// /watch/ path): a reflector decides what a failed watch means. Never a
// connection upgrade. Beware that a 504 can come after the server did the
// work: a retried POST with generateName may create a second object.
//
// The n-th retry waits a random time in [0, min(8 s, 500 ms·2ⁿ⁻¹)] (full
// jitter, so that many clients do not retry in step), or the server's
// Retry-After (seconds or HTTP-date) when that is longer. It stops after 4
// attempts, or as soon as the next wait would end past 30 s from the first
// attempt or past the request context's deadline, and returns the last
// response; a cancelled context ends a wait at once. All of it is set with
// options.
//
// # Who retries what: the transport and client-go
//
// client-go's rest client has its own loop: it retries any 429 or 5xx that
// carries Retry-After in whole seconds, sleeping exactly that long, up to 10
// times (Request.MaxRetries), and GETs that hit a connection reset or EOF.
// Stacked naively, the two loops multiply: 4 attempts in the transport for
// each of client-go's 11 would be 44. So the transport sits under client-go
// (Wrap installs it as WrapTransport, below authentication) and they split
// the work by response:
//
//	429, 503, 504 on a replayable request that is no watch
//	    the transport retries; when it gives up it rewrites Retry-After from
//	    seconds to the equivalent HTTP-date, a form client-go ignores, so the
//	    request is not retried again above it. The Status body still carries
//	    details.retryAfterSeconds, so failure.RetryAfter(err) still works.
//	watches, requests it cannot replay, 500, 502 and other 5xx with Retry-After
//	    passed through untouched: client-go's loop acts on them as before.
//	connection resets on GET
//	    client-go's loop, as before.
//
// With the transport, a request that keeps getting 429 is sent exactly
// WithMaxAttempts times (tested against the real API server: 3 attempts
// configured, 3 requests seen); without it, client-go sends it 11 times, one
// second apart. Retries made by the transport are not counted by client-go's
// rate limiter or its retry metrics; WithOnRetry reports them.
//
// # Time-outs for single calls
//
// CallWithTimeout and ValueWithTimeout run a function under a deadline, the
// Go form of wrapping one API call in a time-out. Only a failure caused by
// that deadline becomes a *failure.Error; a server answer (404, 409) stays
// what it is, and so does anything after the caller's own context ended.
package retry
