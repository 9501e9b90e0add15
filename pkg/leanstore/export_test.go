package leanstore

import "k8s.io/client-go/tools/cache"

// ListerWatcherForTest is the informer's own list and watch, for tests that
// drive them without the informer's reflector.
func (i *Informer) ListerWatcherForTest() cache.ListerWatcherWithContext { return i.lw }
