package faults

import (
	"fmt"
	"time"
)

// Fault is what the proxy does to a request instead of, or on top of,
// forwarding it. Build one with the constructors below; the zero Fault does
// nothing (the request is forwarded unchanged).
type Fault struct {
	kind       faultKind
	code       int
	retryAfter time.Duration
	n          int
}

type faultKind int

const (
	none faultKind = iota
	gone
	goneAfterEvents
	status
	stall
	cut
	slow
	truncate
	malformed
	answerJSON
	dropInitialEventsEnd
	truncateAfterItems
)

// Gone answers the way an expired resourceVersion does. On a watch or a
// streaming list the stream starts normally and its first event is an ERROR
// event carrying a 410 Status (reason Expired), then the stream ends; on any
// other request the answer is HTTP 410 with that Status.
func Gone() Fault { return Fault{kind: gone, code: 410} }

// GoneAfterEvents lets n events of a watch or streaming list through and then
// ends the stream with a 410 ERROR event, as when a streaming list breaks
// part-way. On a request that is not a stream it acts like Gone.
func GoneAfterEvents(n int) Fault { return Fault{kind: goneAfterEvents, code: 410, n: n} }

// Status answers with an HTTP error code (429, 500, 503, 504, 403, ...) and a
// metav1.Status body, without forwarding the request. A retryAfter above zero
// sets the Retry-After header (whole seconds, rounded up) and the Status's
// details.retryAfterSeconds, as the API server does for 429.
//
// Given to EndWatches, it ends each live stream with an ERROR event carrying
// that Status instead.
func Status(code int, retryAfter time.Duration) Fault {
	return Fault{kind: status, code: code, retryAfter: retryAfter}
}

// Stall forwards the request, sends the response headers, and then nothing:
// the connection stays open until the client gives up or the proxy closes.
// It is the silent network failure that only a client-side time-out detects.
func Stall() Fault { return Fault{kind: stall} }

// Cut forwards the request and closes the connection abruptly after
// afterBytes bytes of the response body, without ending it properly: the
// client reads an unexpected EOF.
func Cut(afterBytes int) Fault { return Fault{kind: cut, n: afterBytes} }

// Slow forwards the request and delivers the response body at most
// bytesPerSecond bytes per second.
func Slow(bytesPerSecond int) Fault { return Fault{kind: slow, n: bytesPerSecond} }

// Truncate forwards the request and ends the response body cleanly after
// afterBytes bytes (Content-Length is dropped, so the HTTP exchange itself is
// well-formed): the client gets a short body and fails to decode it.
func Truncate(afterBytes int) Fault { return Fault{kind: truncate, n: afterBytes} }

// Malformed forwards the request and corrupts the response: a non-stream body
// is replaced by garbage in its own encoding (broken JSON, or the protobuf
// envelope followed by bytes that are no message); on a watch or streaming
// list a well-framed but undecodable frame is sent before the first event.
func Malformed() Fault { return Fault{kind: malformed} }

// TruncateAfterItems forwards a LIST and ends its response cleanly right after
// its n-th item (at most all but one): a protobuf body is cut at a field
// boundary inside the list, so that only a decoder that checks the lengths the
// body declares can tell it from a shorter list; a JSON body is cut at the
// same share of its bytes, mid-document. On a stream it acts like Truncate at
// the body's start.
func TruncateAfterItems(n int) Fault { return Fault{kind: truncateAfterItems, n: n} }

// AnswerJSON forwards the request asking the server for JSON, whatever the
// client asked for (each protobuf media type in its Accept header becomes
// JSON, with the same parameters): the client
// meets a server that cannot encode protobuf, as aggregated API servers and
// custom resources are, or a proxy that rewrites what it is asked for.
func AnswerJSON() Fault { return Fault{kind: answerJSON} }

// DropInitialEventsEnd forwards a streaming list but drops the bookmark that
// marks the end of its initial events (annotated k8s.io/initial-events-end),
// and every other bookmark of that stream: the client meets a server that
// ignores sendInitialEvents, a known problem of aggregated API servers
// (kubernetes/kubernetes#140890). The stream otherwise carries on as a watch.
func DropInitialEventsEnd() Fault { return Fault{kind: dropInitialEventsEnd} }

// IsZero reports whether f does nothing.
func (f Fault) IsZero() bool { return f.kind == none }

// countedWhenActing reports whether the proxy counts a request under f as
// faulted only when f acts: a Cut or Truncate acts only if the body reaches
// the byte where it cuts, which is known once the body is read that far.
func (f Fault) countedWhenActing() bool { return f.kind == cut || f.kind == truncate }

// String names the fault for logs and test output, as its constructor call.
func (f Fault) String() string {
	switch f.kind {
	case none:
		return "None"
	case gone:
		return "Gone()"
	case goneAfterEvents:
		return fmt.Sprintf("GoneAfterEvents(%d)", f.n)
	case status:
		return fmt.Sprintf("Status(%d, %s)", f.code, f.retryAfter)
	case stall:
		return "Stall()"
	case cut:
		return fmt.Sprintf("Cut(%d)", f.n)
	case slow:
		return fmt.Sprintf("Slow(%d)", f.n)
	case truncate:
		return fmt.Sprintf("Truncate(%d)", f.n)
	case malformed:
		return "Malformed()"
	case answerJSON:
		return "AnswerJSON()"
	case truncateAfterItems:
		return fmt.Sprintf("TruncateAfterItems(%d)", f.n)
	case dropInitialEventsEnd:
		return "DropInitialEventsEnd()"
	}
	return fmt.Sprintf("Fault(%d)", f.kind)
}
