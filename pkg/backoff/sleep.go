package backoff

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends, whichever comes first. It returns nil
// after the full wait and ctx.Err() when ctx ended first (at once when it
// already had, even for d ≤ 0), so a retry loop stops with its owner.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
