package leanstore

import (
	"time"

	"k8s.io/client-go/tools/cache"
)

// ListerWatcherForTest is the informer's own list and watch, for tests that
// drive them without the informer's reflector.
func (i *Informer) ListerWatcherForTest() cache.ListerWatcherWithContext { return i.lw }

// SetGuardInterval sets how often informers check shared values, for tests of
// the package; it returns a function that restores the interval.
func SetGuardInterval(d time.Duration) (restore func()) {
	old := guardInterval
	guardInterval = d
	return func() { guardInterval = old }
}
