package leanstore

import "time"

// SetGuardInterval sets how often informers check shared values, for tests of
// the package; it returns a function that restores the interval.
func SetGuardInterval(d time.Duration) (restore func()) {
	old := guardInterval
	guardInterval = d
	return func() { guardInterval = old }
}
