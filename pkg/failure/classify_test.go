package failure_test

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
	"os"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cachetune/cachetune/pkg/failure"
)

var pods = schema.GroupResource{Resource: "pods"}

// class builds the expected Class of an error that is its own cause.
func class(r failure.Reason, code int, transient, permanent, clientRetry bool) failure.Class {
	return failure.Class{Layer: r.Layer(), Reason: r, Cause: r, Code: code, Transient: transient, Permanent: permanent, ClientRetry: clientRetry}
}

const (
	T = true
	F = false
)

func jsonSyntaxError() error {
	var v any
	return json.Unmarshal([]byte(`{"a":`), &v)
}

func jsonTypeError() error {
	var v struct{ A int }
	return json.Unmarshal([]byte(`{"A":"x"}`), &v)
}

func TestClassify(t *testing.T) {
	ssa := apierrors.NewApplyConflict([]metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "other"`, Field: ".data.k"}}, "Apply failed with 1 conflict")
	decodeWatch := apierrors.FromObject(apierrors.NewClientErrorReporter(500, "GET", "ClientWatchDecoding").AsObject(errors.New("unable to decode an event from the watch stream: proto: integer overflow")))
	dial := &url.Error{Op: "Get", URL: "https://127.0.0.1:1/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	stalled := &failure.Error{Layer: failure.LayerClient, Reason: failure.Timeout, Call: "get configmap", Err: context.DeadlineExceeded}

	tests := []struct {
		name string
		err  error
		want failure.Class
	}{
		{"nil", nil, failure.Class{}},
		// API statuses, as client-go returns them.
		{"400", apierrors.NewBadRequest("bad"), class(failure.BadRequest, 400, F, T, F)},
		{"401", apierrors.NewUnauthorized("who"), class(failure.Unauthorized, 401, F, T, F)},
		{"403", apierrors.NewForbidden(pods, "p", errors.New("no")), class(failure.Forbidden, 403, F, T, F)},
		{"404", apierrors.NewNotFound(pods, "p"), class(failure.NotFound, 404, F, T, F)},
		{"405", apierrors.NewMethodNotSupported(pods, "patch"), class(failure.MethodNotAllowed, 405, F, T, F)},
		{"409 already exists", apierrors.NewAlreadyExists(pods, "p"), class(failure.AlreadyExists, 409, F, T, F)},
		{"409 resourceVersion", apierrors.NewConflict(pods, "p", errors.New("the object has been modified")), class(failure.Conflict, 409, T, F, F)},
		{"409 server-side apply", ssa, class(failure.FieldManagerConflict, 409, F, T, F)},
		{"410 expired", apierrors.NewResourceExpired("too old resource version"), class(failure.Gone, 410, T, F, F)},
		{"410 gone", apierrors.NewGone("gone"), class(failure.Gone, 410, T, F, F)}, //nolint:staticcheck // servers and proxies still send reason Gone
		{"413", apierrors.NewRequestEntityTooLargeError("big"), class(failure.RequestEntityTooLarge, 413, F, T, F)},
		{"415", apierrors.NewGenericServerResponse(415, "POST", pods, "p", "", 0, false), class(failure.UnsupportedMediaType, 415, F, T, F)},
		{"422", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", field.ErrorList{field.Required(field.NewPath("spec"), "")}), class(failure.Invalid, 422, F, T, F)},
		{"418", apierrors.NewGenericServerResponse(418, "GET", pods, "p", "", 0, false), class(failure.OtherClientStatus, 418, F, T, F)},
		{"429", apierrors.NewTooManyRequests("slow down", 1), class(failure.TooManyRequests, 429, T, F, T)},
		{"500", apierrors.NewInternalError(errors.New("boom")), class(failure.InternalError, 500, T, F, F)},
		{"500 server timeout", apierrors.NewServerTimeout(pods, "list", 1), class(failure.ServerTimeout, 500, T, F, F)},
		{"502", apierrors.NewGenericServerResponse(502, "GET", pods, "", "", 0, false), class(failure.OtherServerStatus, 502, T, F, F)},
		{"503", apierrors.NewServiceUnavailable("down"), class(failure.ServiceUnavailable, 503, T, F, T)},
		{"504", apierrors.NewTimeoutError("slow", 1), class(failure.GatewayTimeout, 504, T, F, T)},
		{"watch ERROR event 410", apierrors.FromObject(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}), class(failure.Gone, 410, T, F, F)},
		{"status with a reason only", apierrors.FromObject(&metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonTooManyRequests}), class(failure.TooManyRequests, 429, T, F, T)},
		{"wrapped status", fmt.Errorf("list pods: %w", apierrors.NewNotFound(pods, "p")), class(failure.NotFound, 404, F, T, F)},
		// Decoding.
		{"undecodable watch frame", decodeWatch, class(failure.Decode, 500, F, T, F)},
		{"json syntax", jsonSyntaxError(), class(failure.Decode, 0, F, T, F)},
		{"json type", jsonTypeError(), class(failure.Decode, 0, F, T, F)},
		{"client-go json parse error", errors.New("couldn't get version/kind; json parse error: unexpected end of JSON input"), class(failure.Decode, 0, F, T, F)},
		{"protobuf", errors.New("proto: integer overflow"), class(failure.Decode, 0, F, T, F)},
		{"protobuf message cut short", io.ErrUnexpectedEOF, class(failure.Decode, 0, F, T, F)},
		{"kind not registered", runtime.NewNotRegisteredErrForKind("test", schema.GroupVersionKind{Kind: "X"}), class(failure.Decode, 0, F, T, F)},
		// The client layer.
		{"canceled", context.Canceled, class(failure.Canceled, 0, F, F, F)},
		{"deadline", context.DeadlineExceeded, class(failure.Timeout, 0, T, F, F)},
		{"url deadline", &url.Error{Op: "Get", URL: "u", Err: context.DeadlineExceeded}, class(failure.Timeout, 0, T, F, F)},
		{"connection refused", dial, class(failure.Network, 0, T, F, F)},
		{"connection reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, class(failure.Network, 0, T, F, F)},
		{"dns", &net.DNSError{Err: "no such host", Name: "x"}, class(failure.Network, 0, T, F, F)},
		{"dns timeout", &net.DNSError{Err: "timeout", Name: "x", IsTimeout: true}, class(failure.Timeout, 0, T, F, F)},
		{"body cut", fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w", io.ErrUnexpectedEOF), class(failure.Network, 0, T, F, F)},
		{"eof", io.EOF, class(failure.Network, 0, T, F, F)},
		{"unknown authority", &url.Error{Op: "Get", URL: "u", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}, class(failure.TLS, 0, F, T, F)},
		{"hostname", x509.HostnameError{Host: "x", Certificate: &x509.Certificate{}}, class(failure.TLS, 0, F, T, F)},
		{"tls to plain http", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, class(failure.TLS, 0, F, T, F)},
		{"unknown", errors.New("something else"), class(failure.Unknown, 0, T, F, F)},
		// Typed errors: the outer reason says where, the cause says what.
		{"watch start forbidden", failure.Watcher(failure.WatchStartFailed, "pods", apierrors.NewForbidden(pods, "", errors.New("no"))),
			failure.Class{Layer: failure.LayerWatcher, Reason: failure.WatchStartFailed, Cause: failure.Forbidden, Code: 403, Permanent: true}},
		{"watch error 410", failure.Watcher(failure.WatchError, "pods", apierrors.NewResourceExpired("too old")),
			failure.Class{Layer: failure.LayerWatcher, Reason: failure.WatchError, Cause: failure.Gone, Code: 410, Transient: true}},
		{"initial list 429", failure.Watcher(failure.InitialListFailed, "pods", apierrors.NewTooManyRequests("x", 1)),
			failure.Class{Layer: failure.LayerWatcher, Reason: failure.InitialListFailed, Cause: failure.TooManyRequests, Code: 429, Transient: true, ClientRetry: true}},
		{"watch failed, unknown cause", failure.Watcher(failure.WatchFailed, "pods", errors.New("x")),
			failure.Class{Layer: failure.LayerWatcher, Reason: failure.WatchFailed, Cause: failure.WatchFailed, Transient: true}},
		{"watch stalled", failure.Watcher(failure.WatchStalled, "pods", errors.New("no event for 2m0s")),
			failure.Class{Layer: failure.LayerWatcher, Reason: failure.WatchStalled, Cause: failure.WatchStalled, Transient: true}},
		{"watch stalled, deadline", failure.Watcher(failure.WatchStalled, "pods", context.DeadlineExceeded),
			failure.Class{Layer: failure.LayerWatcher, Reason: failure.WatchStalled, Cause: failure.Timeout, Transient: true}},
		{"invalid spec", failure.Reconcile(failure.InvalidSpec, "ns/a", errors.New("spec.size missing")),
			failure.Class{Layer: failure.LayerReconcile, Reason: failure.InvalidSpec, Cause: failure.InvalidSpec, Permanent: true}},
		{"reconcile conflict", failure.Reconcile(failure.ReconcileFailed, "ns/a", apierrors.NewConflict(pods, "a", errors.New("modified"))),
			failure.Class{Layer: failure.LayerReconcile, Reason: failure.ReconcileFailed, Cause: failure.Conflict, Code: 409, Transient: true}},
		{"reconcile invalid", failure.Reconcile(failure.ReconcileFailed, "ns/a", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "a", nil)),
			failure.Class{Layer: failure.LayerReconcile, Reason: failure.ReconcileFailed, Cause: failure.Invalid, Code: 422, Permanent: true}},
		{"reconcile wrapping a call time-out", fmt.Errorf("sync: %w", failure.Reconcile(failure.ReconcileFailed, "ns/a", stalled)),
			failure.Class{Layer: failure.LayerReconcile, Reason: failure.ReconcileFailed, Cause: failure.Timeout, Transient: true}},
		{"custom reason follows its cause", &failure.Error{Layer: failure.LayerReconcile, Reason: "QuotaCheck", Err: apierrors.NewForbidden(pods, "", errors.New("no"))},
			failure.Class{Layer: failure.LayerReconcile, Reason: "QuotaCheck", Cause: failure.Forbidden, Code: 403, Permanent: true}},
	}
	for _, tt := range tests {
		got := failure.Classify(tt.err)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: Classify(%v) (-want +got):\n%s", tt.name, tt.err, diff)
		}
		if failure.Transient(tt.err) != tt.want.Transient || failure.Permanent(tt.err) != tt.want.Permanent {
			t.Errorf("%s: Transient %v Permanent %v, want %v %v", tt.name, failure.Transient(tt.err), failure.Permanent(tt.err), tt.want.Transient, tt.want.Permanent)
		}
	}
}

func TestClassString(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, "none"},
		{apierrors.NewTooManyRequests("x", 1), "api/TooManyRequests (429, transient, client-retried)"},
		{failure.Watcher(failure.WatchStartFailed, "pods", apierrors.NewForbidden(pods, "", errors.New("no"))), "watcher/WatchStartFailed: api/Forbidden (403, permanent)"},
		{context.Canceled, "client/Canceled"},
	}
	for _, tt := range tests {
		if got := failure.Classify(tt.err).String(); got != tt.want {
			t.Errorf("Classify(%v).String() = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	inner := errors.New("no event for 2m0s")
	tests := []struct {
		err  *failure.Error
		want string
	}{
		{failure.Watcher(failure.WatchStalled, "pods", inner), "pods: watch stalled: no event for 2m0s"},
		{failure.Reconcile(failure.InvalidSpec, "ns/a", errors.New("spec.size missing")), "ns/a: invalid spec: spec.size missing"},
		{&failure.Error{Reason: failure.Timeout, Resource: "configmaps", Object: "ns/a", Call: "get configmap", Err: context.DeadlineExceeded}, "configmaps ns/a: get configmap: timeout: context deadline exceeded"},
		{&failure.Error{Reason: failure.TLS}, "TLS"},
		{&failure.Error{}, "failed"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	if err := failure.Watcher(failure.WatchStalled, "pods", inner); !errors.Is(err, inner) {
		t.Error("errors.Is does not reach the wrapped error")
	}
}

func TestReasonLayer(t *testing.T) {
	tests := map[failure.Reason]failure.Layer{
		failure.Network: failure.LayerClient, failure.Forbidden: failure.LayerAPI,
		failure.Decode: failure.LayerDecode, failure.WatchStalled: failure.LayerWatcher,
		failure.InvalidSpec: failure.LayerReconcile, "Nonsense": failure.LayerUnknown,
	}
	for r, want := range tests {
		if got := r.Layer(); got != want {
			t.Errorf("%s.Layer() = %s, want %s", r, got, want)
		}
	}
}

// The protobuf module words its errors "proto: ..." or, in some builds,
// "proto:\u00a0..." (a non-breaking space, to discourage matching on the text).
func TestProtobufDecodeErrorsEitherSpacing(t *testing.T) {
	for _, msg := range []string{"proto: variable length integer overflow", "proto:\u00a0variable length integer overflow"} {
		if got := failure.Classify(errors.New(msg)).Reason; got != failure.Decode {
			t.Errorf("Classify(%q).Reason = %s, want Decode", msg, got)
		}
	}
}
