package resilience

import (
	"math"
	"time"

	"github.com/cachetune/cachetune/pkg/leanstore"
)

// MaxAttempts is the most attempts that backoff b allows within d while
// every attempt fails: the first at once, then each after at least b's
// delay without jitter (jitter only adds to a delay), which starts at
// Initial and grows by Factor up to Cap. ResetAfter plays no part: a
// persistent fault never leaves a gap that long below a Cap of 30 s.
//
// With the default backoff (800 ms doubling to 30 s) that is 3 attempts in
// 5 s and 6 in 30 s; client-go's reflector, with the same numbers, gets
// the same bound on the paths where it backs off at all.
func MaxAttempts(b leanstore.Backoff, d time.Duration) int {
	if b.Initial <= 0 {
		return math.MaxInt
	}
	n, elapsed, next := 1, time.Duration(0), b.Initial
	for {
		elapsed += next
		if elapsed > d {
			return n
		}
		n++
		if b.Factor > 1 {
			next = time.Duration(float64(next) * b.Factor)
		}
		if b.Cap > 0 && next > b.Cap {
			next = b.Cap
		}
	}
}
