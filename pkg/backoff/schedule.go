package backoff

import (
	"sync"
	"time"
)

// Schedule is one caller's place in a Backoff: how many failures in a row it
// has had and when the last one was. It is safe for concurrent use.
type Schedule struct {
	b   Backoff
	now func() time.Time // time.Now; tests replace it

	mu          sync.Mutex
	failures    int
	lastFailure time.Time
}

// NewSchedule starts b's schedule with no failures.
func NewSchedule(b Backoff) *Schedule {
	return &Schedule{b: b, now: time.Now}
}

// Next records a failure and returns how long to wait before the next
// attempt: Delay(n) for the n-th failure in a row, where a gap longer than
// ResetAfter since the previous failure (when ResetAfter is positive) starts
// the count again.
func (s *Schedule) Next() time.Duration {
	s.mu.Lock()
	now := s.now()
	if s.b.ResetAfter > 0 && s.failures > 0 && now.Sub(s.lastFailure) > s.b.ResetAfter {
		s.failures = 0
	}
	s.lastFailure = now
	s.failures++
	n := s.failures
	s.mu.Unlock()
	return s.b.Delay(n)
}

// Reset goes back to Initial, after a success.
func (s *Schedule) Reset() {
	s.mu.Lock()
	s.failures = 0
	s.lastFailure = time.Time{}
	s.mu.Unlock()
}

// Failures is the number of failures in a row that Next has counted since
// the last reset.
func (s *Schedule) Failures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failures
}
