package failure

// Layer is where on the path from the network to the reconciler an error
// arose.
type Layer string

// The layers, from the wire up.
const (
	// LayerClient is the HTTP client: connections, TLS, time-outs, cancellation.
	LayerClient Layer = "client"
	// LayerAPI is an API server answer with an error status (4xx, 5xx).
	LayerAPI Layer = "api"
	// LayerDecode is a response or watch frame the client could not decode.
	LayerDecode Layer = "decode"
	// LayerWatcher is an informer's list-and-watch machinery.
	LayerWatcher Layer = "watcher"
	// LayerReconcile is the controller's own code.
	LayerReconcile Layer = "reconcile"
	// LayerUnknown is an error nothing here recognises.
	LayerUnknown Layer = "unknown"
)

// Reason says what went wrong. Each reason belongs to one layer (see
// Reason.Layer), so a reason alone is a complete label for metrics.
type Reason string

// Client-layer reasons.
const (
	// Network: the connection failed (refused, reset, DNS, EOF mid-body).
	Network Reason = "Network"
	// TLS: the handshake or certificate verification failed.
	TLS Reason = "TLS"
	// Timeout: a client-side deadline passed (context deadline, http.Client
	// time-out, a net timeout).
	Timeout Reason = "Timeout"
	// Canceled: the caller cancelled the context.
	Canceled Reason = "Canceled"
)

// API-layer reasons, one per status the API server gives.
const (
	BadRequest            Reason = "BadRequest"            // 400
	Unauthorized          Reason = "Unauthorized"          // 401
	Forbidden             Reason = "Forbidden"             // 403
	NotFound              Reason = "NotFound"              // 404
	MethodNotAllowed      Reason = "MethodNotAllowed"      // 405
	NotAcceptable         Reason = "NotAcceptable"         // 406
	AlreadyExists         Reason = "AlreadyExists"         // 409, reason AlreadyExists
	Conflict              Reason = "Conflict"              // 409: resourceVersion precondition failed
	FieldManagerConflict  Reason = "FieldManagerConflict"  // 409: server-side apply, fields owned by another manager
	Gone                  Reason = "Gone"                  // 410: resourceVersion expired or compacted
	RequestEntityTooLarge Reason = "RequestEntityTooLarge" // 413
	UnsupportedMediaType  Reason = "UnsupportedMediaType"  // 415
	Invalid               Reason = "Invalid"               // 422: the object fails validation
	TooManyRequests       Reason = "TooManyRequests"       // 429
	InternalError         Reason = "InternalError"         // 500
	ServerTimeout         Reason = "ServerTimeout"         // 500 with reason ServerTimeout
	ServiceUnavailable    Reason = "ServiceUnavailable"    // 503
	GatewayTimeout        Reason = "GatewayTimeout"        // 504
	OtherClientStatus     Reason = "OtherClientStatus"     // any other 4xx
	OtherServerStatus     Reason = "OtherServerStatus"     // any other 5xx
)

// Decode-layer reason.
const (
	// Decode: a body or watch frame was not valid JSON or protobuf, or not
	// the expected object.
	Decode Reason = "Decode"
)

// Watcher-layer reasons: the stages of list-and-watch.
const (
	// InitialListFailed: the LIST, or the streaming list, that fills the
	// store failed.
	InitialListFailed Reason = "InitialListFailed"
	// WatchStartFailed: the WATCH request got an error instead of a stream.
	WatchStartFailed Reason = "WatchStartFailed"
	// WatchFailed: a running watch stream broke (cut, undecodable).
	WatchFailed Reason = "WatchFailed"
	// WatchError: the server sent an ERROR event, such as 410 Gone.
	WatchError Reason = "WatchError"
	// WatchStalled: a watch stream stayed silent longer than a healthy one
	// can (bookmarks arrive about once a minute) and was restarted.
	WatchStalled Reason = "WatchStalled"
	// InitialEventsEndMissing: a streaming list's initial events were not
	// followed by the bookmark that ends them (a server that ignores
	// sendInitialEvents, kubernetes/kubernetes#140890); the informer lists
	// with LIST instead.
	InitialEventsEndMissing Reason = "InitialEventsEndMissing"
)

// Reconcile-layer reasons.
const (
	// ReconcileFailed: the reconciler returned an error; whether it is
	// transient follows from the error it wraps.
	ReconcileFailed Reason = "ReconcileFailed"
	// InvalidSpec: the object asks for something that cannot be done; it is
	// permanent until the object changes.
	InvalidSpec Reason = "InvalidSpec"
)

// Unknown is the reason of an error nothing here recognises.
const Unknown Reason = "Unknown"

// policy is how a reason decides whether to retry.
type policy struct {
	layer Layer
	// fixed is true when the reason decides on its own; otherwise the
	// classified cause decides and transient applies only when there is none.
	fixed                bool
	transient, permanent bool
	clientRetry          bool
}

var policies = map[Reason]policy{
	Network:  {layer: LayerClient, fixed: true, transient: true},
	TLS:      {layer: LayerClient, fixed: true, permanent: true},
	Timeout:  {layer: LayerClient, fixed: true, transient: true},
	Canceled: {layer: LayerClient, fixed: true},

	BadRequest:            {layer: LayerAPI, fixed: true, permanent: true},
	Unauthorized:          {layer: LayerAPI, fixed: true, permanent: true},
	Forbidden:             {layer: LayerAPI, fixed: true, permanent: true},
	NotFound:              {layer: LayerAPI, fixed: true, permanent: true},
	MethodNotAllowed:      {layer: LayerAPI, fixed: true, permanent: true},
	NotAcceptable:         {layer: LayerAPI, fixed: true, permanent: true},
	AlreadyExists:         {layer: LayerAPI, fixed: true, permanent: true},
	Conflict:              {layer: LayerAPI, fixed: true, transient: true},
	FieldManagerConflict:  {layer: LayerAPI, fixed: true, permanent: true},
	Gone:                  {layer: LayerAPI, fixed: true, transient: true},
	RequestEntityTooLarge: {layer: LayerAPI, fixed: true, permanent: true},
	UnsupportedMediaType:  {layer: LayerAPI, fixed: true, permanent: true},
	Invalid:               {layer: LayerAPI, fixed: true, permanent: true},
	TooManyRequests:       {layer: LayerAPI, fixed: true, transient: true, clientRetry: true},
	InternalError:         {layer: LayerAPI, fixed: true, transient: true},
	ServerTimeout:         {layer: LayerAPI, fixed: true, transient: true},
	ServiceUnavailable:    {layer: LayerAPI, fixed: true, transient: true, clientRetry: true},
	GatewayTimeout:        {layer: LayerAPI, fixed: true, transient: true, clientRetry: true},
	OtherClientStatus:     {layer: LayerAPI, fixed: true, permanent: true},
	OtherServerStatus:     {layer: LayerAPI, fixed: true, transient: true},

	Decode: {layer: LayerDecode, fixed: true, permanent: true},

	InitialListFailed: {layer: LayerWatcher, transient: true},
	WatchStartFailed:  {layer: LayerWatcher, transient: true},
	WatchFailed:       {layer: LayerWatcher, transient: true},
	WatchError:        {layer: LayerWatcher, transient: true},
	WatchStalled:      {layer: LayerWatcher, fixed: true, transient: true},
	// The informer falls back to LIST by itself: nothing for a caller to retry.
	InitialEventsEndMissing: {layer: LayerWatcher, fixed: true},

	ReconcileFailed: {layer: LayerReconcile, transient: true},
	InvalidSpec:     {layer: LayerReconcile, fixed: true, permanent: true},

	Unknown: {layer: LayerUnknown, transient: true},
}

// Layer is the layer r belongs to; LayerUnknown for a reason not defined here.
func (r Reason) Layer() Layer {
	if p, ok := policies[r]; ok {
		return p.layer
	}
	return LayerUnknown
}
