package failure

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// RetryAfter returns the delay the server asked for before a retry, if err
// carries one: an *Error's RetryAfter, or an API Status's
// details.retryAfterSeconds (which client-go also fills from a Retry-After
// header in seconds when the body is no Status). The API server sets it on
// 429 and on some 5xx.
func RetryAfter(err error) (time.Duration, bool) {
	var fe *Error
	if errors.As(err, &fe) && fe.RetryAfter > 0 {
		return fe.RetryAfter, true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if d := status.Status().Details; d != nil && d.RetryAfterSeconds > 0 {
			return time.Duration(d.RetryAfterSeconds) * time.Second, true
		}
	}
	return 0, false
}

// ParseRetryAfter reads a Retry-After header value, in either of its forms:
// whole seconds ("120") or an HTTP-date ("Wed, 21 Oct 2015 07:28:00 GMT"),
// the latter relative to now. A date in the past gives zero and true: retry
// at once. Anything else gives false.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(value); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
