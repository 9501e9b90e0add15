package faults

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// metaScheme knows metav1.Status and metav1.WatchEvent, which is all the proxy
// ever encodes itself.
var metaScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}()

// protoSerializer writes objects with the Kubernetes protobuf envelope (the
// "k8s\x00" magic and a runtime.Unknown carrying apiVersion and kind): the form
// the embedded object of a protobuf watch event takes.
var protoSerializer = protobuf.NewSerializer(metaScheme, metaScheme)

// reasons gives each status code the reason the API server uses with it.
var reasons = map[int]metav1.StatusReason{
	http.StatusBadRequest:            metav1.StatusReasonBadRequest,
	http.StatusUnauthorized:          metav1.StatusReasonUnauthorized,
	http.StatusForbidden:             metav1.StatusReasonForbidden,
	http.StatusNotFound:              metav1.StatusReasonNotFound,
	http.StatusMethodNotAllowed:      metav1.StatusReasonMethodNotAllowed,
	http.StatusConflict:              metav1.StatusReasonConflict,
	http.StatusGone:                  metav1.StatusReasonExpired,
	http.StatusRequestEntityTooLarge: metav1.StatusReasonRequestEntityTooLarge,
	http.StatusUnprocessableEntity:   metav1.StatusReasonInvalid,
	http.StatusTooManyRequests:       metav1.StatusReasonTooManyRequests,
	http.StatusInternalServerError:   metav1.StatusReasonInternalError,
	http.StatusServiceUnavailable:    metav1.StatusReasonServiceUnavailable,
	http.StatusGatewayTimeout:        metav1.StatusReasonTimeout,
}

// statusFor builds the Status the fault answers with, naming the request's
// resource and object the way the API server's own errors do.
func statusFor(f Fault, req request) *metav1.Status {
	reason, ok := reasons[f.code]
	if !ok {
		reason = metav1.StatusReasonUnknown
	}
	msg := fmt.Sprintf("injected by the fault proxy: %s", f)
	if f.code == http.StatusGone {
		msg = "too old resource version (injected by the fault proxy)"
	}
	s := &metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure,
		Code:     int32(f.code),
		Reason:   reason,
		Message:  msg,
	}
	if req.Resource != "" || f.retryAfter > 0 {
		s.Details = &metav1.StatusDetails{Kind: req.Resource, Name: req.Name}
		if f.retryAfter > 0 {
			s.Details.RetryAfterSeconds = retryAfterSeconds(f.retryAfter)
		}
	}
	return s
}

// retryAfterSeconds rounds d up to whole seconds, the only unit Retry-After
// and details.retryAfterSeconds have.
func retryAfterSeconds(d time.Duration) int32 {
	return int32(math.Ceil(d.Seconds()))
}

// writeStatus answers a request with an HTTP error and a JSON Status body.
// JSON is always acceptable: client-go decodes error bodies in either
// encoding, and so does every other client.
func writeStatus(w http.ResponseWriter, s *metav1.Status) int {
	body, _ := json.Marshal(s)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if s.Details != nil && s.Details.RetryAfterSeconds > 0 {
		h.Set("Retry-After", strconv.Itoa(int(s.Details.RetryAfterSeconds)))
	}
	w.WriteHeader(int(s.Code))
	n, _ := w.Write(body)
	return n
}

// encoding is how a response body is written, from its Content-Type.
type encoding int

const (
	encOther encoding = iota
	encJSON
	encProtobuf
)

func encodingOf(contentType string) encoding {
	switch {
	case bytes.Contains([]byte(contentType), []byte("protobuf")):
		return encProtobuf
	case bytes.Contains([]byte(contentType), []byte("json")):
		return encJSON
	}
	return encOther
}

// errorEvent encodes a watch ERROR event carrying s as one frame of a watch
// stream in enc, exactly as the API server writes one: a JSON object on its
// own line, or a 4-byte big-endian length followed by a metav1.WatchEvent whose
// object is the Status in the protobuf envelope.
func errorEvent(enc encoding, s *metav1.Status) ([]byte, error) {
	switch enc {
	case encJSON:
		b, err := json.Marshal(&metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Object: s}})
		if err != nil {
			return nil, err
		}
		return append(b, '\n'), nil
	case encProtobuf:
		var obj bytes.Buffer
		if err := protoSerializer.Encode(s, &obj); err != nil {
			return nil, fmt.Errorf("encode status as protobuf: %w", err)
		}
		ev := &metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Raw: obj.Bytes()}}
		b, err := ev.Marshal()
		if err != nil {
			return nil, fmt.Errorf("encode watch event as protobuf: %w", err)
		}
		return lengthPrefixed(b), nil
	}
	return nil, fmt.Errorf("no watch framing known for this content type")
}

func lengthPrefixed(b []byte) []byte {
	out := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(out, uint32(len(b)))
	return append(out, b...)
}

// garbageFrame is one frame of a watch stream in enc that is framed correctly
// but cannot be decoded: broken JSON on its own line, or a length-prefixed
// frame of bytes that are no protobuf message.
func garbageFrame(enc encoding) []byte {
	if enc == encProtobuf {
		return lengthPrefixed(bytes.Repeat([]byte{0xff}, 16))
	}
	return []byte("{\"type\":\"MODIFIED\",\"object\":{\"kind\":}}\n")
}

// garbageBody replaces a whole non-stream response body in enc.
func garbageBody(enc encoding) []byte {
	if enc == encProtobuf {
		// The envelope magic, so the client takes it for protobuf, then junk.
		return append([]byte{0x6b, 0x38, 0x73, 0x00}, bytes.Repeat([]byte{0xff}, 16)...)
	}
	return []byte("{\"kind\":\"Status\",\"apiVersion\":\"v1\",garbage}")
}

// cutAfterItems returns where to cut a LIST response body in enc so that n of
// its items (at most all but one) remain: for protobuf, the end of the n-th
// item's field inside the list message; for JSON, the same share of the body.
func cutAfterItems(body []byte, enc encoding, n int) int {
	if enc != encProtobuf || len(body) < 4 {
		return len(body) / 2
	}
	// The envelope: magic, then runtime.Unknown's fields; field 2 is the
	// list message, whose field 2 repeats the items.
	msg, base := body[4:], 4
	for len(msg) > 0 {
		num, typ, tn := protowire.ConsumeTag(msg)
		if tn < 0 {
			break
		}
		if typ != protowire.BytesType {
			break
		}
		v, vn := protowire.ConsumeBytes(msg[tn:])
		if vn < 0 {
			break
		}
		if num == 2 {
			start := base + tn + (vn - len(v))
			return start + itemsEnd(v, n)
		}
		msg, base = msg[tn+vn:], base+tn+vn
	}
	return len(body) / 2
}

// itemsEnd is the offset in a list message after its n-th item, at a field
// boundary, keeping at least one item out when the list has any.
func itemsEnd(list []byte, n int) int {
	var starts, ends []int
	off := 0
	for off < len(list) {
		num, typ, tn := protowire.ConsumeTag(list[off:])
		if tn < 0 {
			break
		}
		vn := protowire.ConsumeFieldValue(num, typ, list[off+tn:])
		if vn < 0 {
			break
		}
		if num == 2 {
			starts, ends = append(starts, off), append(ends, off+tn+vn)
		}
		off += tn + vn
	}
	if len(ends) == 0 {
		return len(list) / 2
	}
	keep := min(max(n, 0), len(ends)-1)
	if keep == 0 {
		return starts[0]
	}
	return ends[keep-1]
}
