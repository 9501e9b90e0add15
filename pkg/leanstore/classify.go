package leanstore

import (
	"context"
	"errors"
	"fmt"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// classify names an error's class and whether it is transient.
// TODO: delegate to pkg/failure once it lands.
func classify(err error) (class string, transient bool) {
	var stalled *stalledError
	switch {
	case errors.As(err, &stalled):
		return "watch-stalled", true
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", true
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		return "status-410", true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := int(status.Status().Code)
		switch {
		case code == 429 || code >= 500:
			return fmt.Sprintf("status-%d", code), true
		case code >= 400:
			return fmt.Sprintf("status-%d", code), false
		}
	}
	var ne net.Error
	if errors.As(err, &ne) {
		if ne.Timeout() {
			return "timeout", true
		}
		return "network", true
	}
	return "other", true
}

// stalledError is a watch that delivered nothing for longer than the idle timeout.
type stalledError struct{ idle string }

func (e *stalledError) Error() string { return "watch stalled: no event or bookmark for " + e.idle }
