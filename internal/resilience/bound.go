package resilience

import (
	"time"

	"github.com/cachetune/cachetune/pkg/leanstore"
)

// MaxAttempts is the most attempts that backoff b allows within d while
// every attempt fails: b.MaxAttempts(d), the bound maths of pkg/backoff.
// The first attempt goes at once, then each after at least b's delay
// without jitter (jitter only adds to a delay).
//
// With the default backoff (800 ms doubling to 30 s) that is 3 attempts in
// 5 s and 6 in 30 s; client-go's reflector, with the same numbers, gets
// the same bound on the paths where it backs off at all.
func MaxAttempts(b leanstore.Backoff, d time.Duration) int {
	return b.MaxAttempts(d)
}
