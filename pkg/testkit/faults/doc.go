// Package faults is a fault-injection reverse proxy for testing Kubernetes
// clients: put it between a client and a real API server, add rules, and the
// client meets 410 Gone on its watches, 429s with Retry-After, stalled or cut
// streams, slow, truncated or malformed bodies, exactly where the rules say.
// Tests use it to prove that informers recover and retries stay bounded;
// cachebench uses it to force re-lists. It is part of the test kit
// (pkg/testkit), beside apiserver and dataset.
//
// The guide that uses it: docs/errors-and-backoff.md.
//
//	p, err := faults.Start(srv.Config) // any *rest.Config with a bearer token
//	if err != nil { ... }
//	defer p.Close()
//	cs := kubernetes.NewForConfigOrDie(p.Config(srv.Config))
//
//	// The next two LISTs of pods get a 429 with Retry-After: 1.
//	p.AddRule(faults.Rule{
//		Match: faults.Match{Resource: "pods", Verb: faults.List},
//		Fault: faults.Status(429, time.Second), Count: 2,
//	})
//	// End every live pod watch now, the way a compacted resourceVersion
//	// does: the informers re-list.
//	n := p.EndWatches(faults.Match{Resource: "pods"}, faults.Gone())
//
// # What the client sees
//
// Statuses (Status, and Gone on a request that is not a stream) are answered
// by the proxy itself with a metav1.Status body, the reason the API server
// uses with that code, and a Retry-After header when asked. Every other fault
// forwards the request and changes the response. Watch streams (JSON, and
// protobuf with its 4-byte length prefix) are forwarded frame by frame, so an
// injected ERROR event or garbage frame always lands on a frame boundary and
// is encoded the way the server would encode it.
//
// # Identities
//
// The proxy connects to the server with the upstream TLS settings and no
// credentials of its own; the client's Authorization header passes through.
// A restricted identity therefore stays restricted behind the proxy. A client
// certificate cannot pass through a plain-HTTP proxy: with
// WithUpstreamCredentials the proxy authenticates every request itself, as
// upstream's user (certificate, token or exec plugin), as kubectl proxy does.
//
// # Counting
//
// Counts reports requests by verb and resource, by User-Agent, per
// wall-clock second, the number of faulted requests and the body bytes sent
// to clients: the figures that show whether a client backs off under a fault
// or spins, and which client listed.
//
// A Counter tells whether a fault really happened: give one to a Rule (its
// Counter field), or call EndWatchesCounted instead of EndWatches, and its
// Acted method counts the requests and streams on which the fault took
// effect, which Fired (picked by the rule) does not tell apart from those
// that escaped it (a cut past the end of a body, a stream that closed first):
//
//	c := &faults.Counter{}
//	p.AddRule(faults.Rule{Match: faults.Match{Resource: "pods", Verb: faults.List},
//		Fault: faults.Truncate(500), Counter: c})
//	... // the client lists
//	if c.Acted() == 0 { ... } // every list was shorter than 500 bytes
package faults
