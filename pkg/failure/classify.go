package failure

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Class is what Classify knows about an error: where it surfaced, what lies
// underneath, and what to do about it.
type Class struct {
	// Layer and Reason are where the error surfaced: the outermost *Error in
	// the chain, or else the cause itself. A watch that failed with a 403 is
	// Layer watcher, Reason WatchStartFailed.
	Layer  Layer
	Reason Reason
	// Cause is the most specific reason found underneath (Forbidden in the
	// example); it equals Reason when nothing more specific is known.
	Cause Reason
	// Code is the HTTP status code when the cause is an API status, else 0.
	Code int
	// Transient: retrying later, with backoff, may succeed (network errors,
	// time-outs, 429, 5xx, resourceVersion conflicts, 410 Gone).
	Transient bool
	// Permanent: retrying the same request will fail the same way until
	// something changes (the object, RBAC, the configuration): 400, 401, 403,
	// 404, 422, field-manager conflicts, TLS verification, decode errors.
	// A cancelled context is neither transient nor permanent.
	Permanent bool
	// ClientRetry: the client layer (package retry's transport) retries it
	// by itself: 429, 503 and 504. Other transient errors belong to the
	// watcher's or the reconciler's backoff.
	ClientRetry bool
}

// String renders the class for logs, e.g.
// "watcher/WatchStartFailed: api/Forbidden (403, permanent)".
func (c Class) String() string {
	if c.Reason == "" {
		return "none"
	}
	s := string(c.Layer) + "/" + string(c.Reason)
	if c.Cause != "" && c.Cause != c.Reason {
		s += ": " + string(c.Cause.Layer()) + "/" + string(c.Cause)
	}
	var attrs []string
	if c.Code != 0 {
		attrs = append(attrs, fmt.Sprint(c.Code))
	}
	switch {
	case c.Transient:
		attrs = append(attrs, "transient")
	case c.Permanent:
		attrs = append(attrs, "permanent")
	}
	if c.ClientRetry {
		attrs = append(attrs, "client-retried")
	}
	if len(attrs) > 0 {
		s += " (" + strings.Join(attrs, ", ") + ")"
	}
	return s
}

// Classify works out the class of any error: cachetune's *Error, client-go's
// StatusError (including the ones built from watch ERROR events), url.Error,
// net.OpError, context errors, x509 and TLS errors, JSON and protobuf decode
// errors. An error it does not recognise is LayerUnknown and transient, the
// safe default for a controller (retry with backoff). Classify(nil) is the
// zero Class.
func Classify(err error) Class {
	if err == nil {
		return Class{}
	}
	var fe *Error
	if errors.As(err, &fe) {
		return classifyError(fe)
	}
	return fromCause(cause(err))
}

// Transient reports whether err may go away if the same thing is tried
// again later: see Class.Transient.
func Transient(err error) bool { return Classify(err).Transient }

// Permanent reports whether retrying err is pointless until something
// changes: see Class.Permanent.
func Permanent(err error) bool { return Classify(err).Permanent }

// causeClass is the innermost classification of an error.
type causeClass struct {
	reason Reason
	code   int
}

func fromCause(c causeClass) Class {
	p := policies[c.reason]
	return Class{
		Layer: p.layer, Reason: c.reason, Cause: c.reason, Code: c.code,
		Transient: p.transient, Permanent: p.permanent, ClientRetry: p.clientRetry,
	}
}

// classifyError classifies a typed error: its own reason says where, the
// error it wraps says what, and the reason's policy says which one decides.
func classifyError(e *Error) Class {
	layer := e.Layer
	if layer == "" {
		layer = e.Reason.Layer()
	}
	out := Class{Layer: layer, Reason: e.Reason, Cause: e.Reason}
	inner := Class{Reason: Unknown, Cause: Unknown}
	if e.Err != nil {
		inner = Classify(e.Err)
	}
	if inner.Cause != Unknown {
		out.Cause, out.Code = inner.Cause, inner.Code
	}
	p, known := policies[e.Reason]
	switch {
	case known && p.fixed:
		out.Transient, out.Permanent, out.ClientRetry = p.transient, p.permanent, p.clientRetry
	case inner.Cause != Unknown || !known:
		out.Transient, out.Permanent, out.ClientRetry = inner.Transient, inner.Permanent, inner.ClientRetry
	default:
		out.Transient, out.Permanent = p.transient, p.permanent
	}
	return out
}

// cause finds the most specific thing known about err, looking at typed
// errors first and, since client-go formats some errors with %v rather than
// %w, at well-known messages last.
func cause(err error) causeClass {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return statusCause(status.Status())
	}
	switch {
	case errors.Is(err, context.Canceled):
		return causeClass{reason: Canceled}
	case errors.Is(err, context.DeadlineExceeded):
		return causeClass{reason: Timeout}
	}
	if isTLS(err) {
		return causeClass{reason: TLS}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return causeClass{reason: Timeout}
	}
	if isDecode(err) {
		return causeClass{reason: Decode}
	}
	if isNetwork(err) {
		return causeClass{reason: Network}
	}
	return causeClass{reason: Unknown}
}

// statusCause maps an API status to a reason: by code, then by the reason
// and causes the server gives for codes that mean several things.
func statusCause(s metav1.Status) causeClass {
	code := int(s.Code)
	if code == 0 {
		code = codeForReason[s.Reason]
	}
	c := causeClass{code: code}
	switch {
	case hasCause(s, clientWatchDecoding):
		c.reason = Decode
	case code == 409 && s.Reason == metav1.StatusReasonAlreadyExists:
		c.reason = AlreadyExists
	case code == 409 && hasCause(s, metav1.CauseTypeFieldManagerConflict):
		c.reason = FieldManagerConflict
	case code == 500 && s.Reason == metav1.StatusReasonServerTimeout:
		c.reason = ServerTimeout
	case byCode[code] != "":
		c.reason = byCode[code]
	case code >= 500:
		c.reason = OtherServerStatus
	case code >= 400:
		c.reason = OtherClientStatus
	default:
		c.reason = Unknown
	}
	return c
}

// clientWatchDecoding is the cause type client-go gives the 500 Status it
// makes up when a watch frame cannot be decoded.
const clientWatchDecoding metav1.CauseType = "ClientWatchDecoding"

var byCode = map[int]Reason{
	400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound,
	405: MethodNotAllowed, 406: NotAcceptable, 409: Conflict, 410: Gone,
	413: RequestEntityTooLarge, 415: UnsupportedMediaType, 422: Invalid,
	429: TooManyRequests, 500: InternalError, 503: ServiceUnavailable,
	504: GatewayTimeout,
}

// codeForReason fills in a code for Statuses that carry only a reason.
var codeForReason = map[metav1.StatusReason]int{
	metav1.StatusReasonBadRequest: 400, metav1.StatusReasonUnauthorized: 401,
	metav1.StatusReasonForbidden: 403, metav1.StatusReasonNotFound: 404,
	metav1.StatusReasonAlreadyExists: 409, metav1.StatusReasonConflict: 409,
	metav1.StatusReasonGone: 410, metav1.StatusReasonExpired: 410,
	metav1.StatusReasonInvalid: 422, metav1.StatusReasonTooManyRequests: 429,
	metav1.StatusReasonInternalError: 500, metav1.StatusReasonServerTimeout: 500,
	metav1.StatusReasonServiceUnavailable: 503, metav1.StatusReasonTimeout: 504,
}

func hasCause(s metav1.Status, t metav1.CauseType) bool {
	if s.Details == nil {
		return false
	}
	for _, c := range s.Details.Causes {
		if c.Type == t {
			return true
		}
	}
	return false
}

func isTLS(err error) bool {
	var (
		unknownAuthority x509.UnknownAuthorityError
		invalid          x509.CertificateInvalidError
		hostname         x509.HostnameError
		verification     *tls.CertificateVerificationError
		recordHeader     tls.RecordHeaderError
		alert            tls.AlertError
	)
	return errors.As(err, &unknownAuthority) || errors.As(err, &invalid) ||
		errors.As(err, &hostname) || errors.As(err, &verification) ||
		errors.As(err, &recordHeader) || errors.As(err, &alert)
}

// decodeMessages are the texts client-go and apimachinery give decode errors
// they do not wrap with %w.
var decodeMessages = []string{
	"json parse error", // runtime/serializer/json, "couldn't get version/kind; json parse error"
	"unable to decode", // streaming decoders
	"proto:",           // generated protobuf unmarshalling; the protobuf module sometimes puts a non-breaking space after the colon
	"unexpected end of JSON input",
	"invalid character",  // encoding/json syntax errors
	"object has no kind", // runtime.missingKindErr text variants
	"Object 'Kind' is missing",
	"strict decoding error",
}

func isDecode(err error) bool {
	var (
		syntax      *json.SyntaxError
		unmarshal   *json.UnmarshalTypeError
		invalidUTF8 *json.InvalidUnmarshalError
	)
	if errors.As(err, &syntax) || errors.As(err, &unmarshal) || errors.As(err, &invalidUTF8) ||
		runtime.IsNotRegisteredError(err) || runtime.IsMissingKind(err) || runtime.IsMissingVersion(err) ||
		runtime.IsStrictDecodingError(err) {
		return true
	}
	// A bare io.ErrUnexpectedEOF is a message cut short (protobuf
	// unmarshalling returns it); the same error from a broken connection
	// comes wrapped in a url.Error or in client-go's "reading response body".
	if err == io.ErrUnexpectedEOF {
		return true
	}
	msg := err.Error()
	for _, m := range decodeMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// networkMessages are the texts of network failures that reach callers as
// plain strings.
var networkMessages = []string{
	"connection refused", "connection reset", "broken pipe", "unexpected EOF",
	"EOF", "use of closed network connection", "no such host", "http2: ",
	"reading response body", "server closed", "network is unreachable",
}

func isNetwork(err error) bool {
	var (
		urlErr *url.Error
		opErr  *net.OpError
		dnsErr *net.DNSError
	)
	if errors.As(err, &urlErr) || errors.As(err, &opErr) || errors.As(err, &dnsErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	msg := err.Error()
	for _, m := range networkMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}
