package leanstore

import (
	"context"
	"time"

	"github.com/cachetune/cachetune/pkg/backoff"
)

// backoffState is one informer's retry delay: a backoff.Schedule. Unlike
// client-go's reflector, which only resets after a quiet period
// (ResetAfter), an informer also resets it on every success, so that a
// fault that comes back after a recovery starts again at Initial rather
// than at the delay the last outage reached.
type backoffState struct{ s *backoff.Schedule }

func newBackoffState(b Backoff) *backoffState {
	return &backoffState{s: backoff.NewSchedule(b)}
}

// delay returns how long to wait after a failure, and advances the backoff.
func (s *backoffState) delay() time.Duration { return s.s.Next() }

// reset goes back to the initial delay after a success.
func (s *backoffState) reset() { s.s.Reset() }

// sleep waits d or until ctx ends; it reports whether the full delay passed.
func sleep(ctx context.Context, d time.Duration) bool {
	return backoff.Sleep(ctx, d) == nil
}
