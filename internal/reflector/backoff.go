package reflector

import (
	"context"
	"time"

	"github.com/cachetune/cachetune/pkg/backoff"
)

// BackoffState is one informer's retry delay: a backoff.Schedule. Unlike
// client-go's reflector, which only resets after a quiet period
// (ResetAfter), an informer also resets it on every success, so that a
// fault that comes back after a recovery starts again at Initial rather
// than at the delay the last outage reached.
type BackoffState struct{ s *backoff.Schedule }

// NewBackoffState returns a retry delay that follows b.
func NewBackoffState(b backoff.Backoff) *BackoffState {
	return &BackoffState{s: backoff.NewSchedule(b)}
}

// Delay returns how long to wait after a failure, and advances the backoff.
func (s *BackoffState) Delay() time.Duration { return s.s.Next() }

// Reset goes back to the initial delay after a success.
func (s *BackoffState) Reset() { s.s.Reset() }

// sleep waits d or until ctx ends; it reports whether the full delay passed.
func sleep(ctx context.Context, d time.Duration) bool {
	return backoff.Sleep(ctx, d) == nil
}
