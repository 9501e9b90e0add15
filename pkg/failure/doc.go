// Package failure is cachetune's error taxonomy: it tells, for any error on
// the path from the network to a reconciler, where it arose, what it is, and
// whether trying again can help.
//
// The guide that uses it: docs/errors-and-backoff.md.
//
//	switch c := failure.Classify(err); {
//	case c.Permanent: // 400, 403, 404, 422, SSA field conflicts: record it, wait for a change
//	case c.Transient: // network, time-outs, 429, 5xx, resourceVersion conflicts: requeue with backoff
//	}
//	if d, ok := failure.RetryAfter(err); ok { ... } // the server's own delay
//
// # Layers and reasons
//
// Errors arise at five layers, each with its reasons:
//
//	client     Network, TLS, Timeout, Canceled
//	api        BadRequest 400, Unauthorized 401, Forbidden 403, NotFound 404,
//	           MethodNotAllowed 405, NotAcceptable 406, AlreadyExists 409,
//	           Conflict 409 (resourceVersion), FieldManagerConflict 409 (server-side apply),
//	           Gone 410, RequestEntityTooLarge 413, UnsupportedMediaType 415,
//	           Invalid 422, TooManyRequests 429, InternalError 500,
//	           ServerTimeout 500, ServiceUnavailable 503, GatewayTimeout 504,
//	           OtherClientStatus 4xx, OtherServerStatus 5xx
//	decode     Decode
//	watcher    InitialListFailed, WatchStartFailed, WatchFailed, WatchError, WatchStalled,
//	           InitialEventsEndMissing
//	reconcile  ReconcileFailed, InvalidSpec
//
// Classify recognises client-go's StatusError (also the ones made from watch
// ERROR events and from undecodable watch frames), url.Error, net errors,
// context errors, x509 and TLS errors and decode errors, and falls back to
// the well-known messages of the errors client-go formats with %v.
//
// # What to retry
//
//	transient, retried by the client layer (package retry): 429, 503, 504
//	transient, left to the watcher's or reconciler's backoff: network errors,
//	    time-outs, 500 and other 5xx, 409 resourceVersion conflicts, 410 Gone
//	permanent: 400, 401, 403, 404, 405, 406, 409 AlreadyExists, 409
//	    field-manager conflicts, 413, 415, 422, other 4xx, TLS verification,
//	    decode errors (the same request normally returns the same bytes)
//	neither: a cancelled context (the caller gave up)
//	unknown errors: transient, the safe default under backoff
//
// The two kinds of 409 are told apart by the Status: a server-side apply
// conflict carries causes of type FieldManagerConflict (another manager owns
// the fields: apply with force, or change the manager), a resourceVersion
// conflict does not (read again and retry).
//
// # Typed errors
//
// Error carries the layer, reason, resource, object and call with the
// underlying error. Informers report list-and-watch failures with Watcher,
// reconcilers theirs with Reconcile:
//
//	return failure.Watcher(failure.WatchStalled, "pods", fmt.Errorf("no event for %s", idle))
//	return failure.Reconcile(failure.InvalidSpec, key, errors.New("spec.size must be positive"))
//
// Classify gives such an error its own layer and reason, the most specific
// cause underneath (a watch that failed with 403 is WatchStartFailed, cause
// Forbidden, permanent), and the retry policy of the cause, except for
// reasons that decide for themselves (WatchStalled and Timeout are always
// transient, InvalidSpec always permanent).
package failure
