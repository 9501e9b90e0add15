package leanstore

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// backoffState is one informer's retry delay. Unlike client-go's reflector, which
// only resets after a quiet period, it also resets on every success, as the seed's
// error-handling guide asks.
type backoffState struct {
	b           Backoff
	mu          sync.Mutex
	next        time.Duration
	lastFailure time.Time
}

func newBackoffState(b Backoff) *backoffState {
	return &backoffState{b: b, next: b.Initial}
}

// delay returns how long to wait after a failure, and advances the backoff.
func (s *backoffState) delay() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.b.ResetAfter > 0 && !s.lastFailure.IsZero() && now.Sub(s.lastFailure) > s.b.ResetAfter {
		s.next = s.b.Initial
	}
	s.lastFailure = now
	d := s.next
	if s.b.Factor > 1 {
		s.next = time.Duration(float64(s.next) * s.b.Factor)
	}
	if s.b.Cap > 0 && s.next > s.b.Cap {
		s.next = s.b.Cap
	}
	if s.b.Jitter > 0 {
		d += time.Duration(rand.Float64() * s.b.Jitter * float64(d))
	}
	return d
}

// reset goes back to the initial delay after a success.
func (s *backoffState) reset() {
	s.mu.Lock()
	s.next = s.b.Initial
	s.lastFailure = time.Time{}
	s.mu.Unlock()
}

// sleep waits d or until ctx ends; it reports whether the full delay passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
