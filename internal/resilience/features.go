package resilience

import (
	"sync"

	clientfeatures "k8s.io/client-go/features"
)

// watchListGate overrides client-go's WatchListClient gate and defers every
// other gate to the gates it replaced.
type watchListGate struct {
	on   bool
	rest clientfeatures.Gates
}

func (g watchListGate) Enabled(f clientfeatures.Feature) bool {
	if f == clientfeatures.WatchListClient {
		return g.on
	}
	return g.rest.Enabled(f)
}

var gateMu sync.Mutex

// SetWatchList switches client-go's WatchListClient gate (streaming lists)
// for the reflectors built until restore is called. client-go reads the gate
// when it builds a reflector, so set it before building an informer. The gate
// is process-wide: do not build informers concurrently with different
// settings. client-go logs once that its default gates were replaced.
func SetWatchList(on bool) (restore func()) {
	gateMu.Lock()
	prev := clientfeatures.FeatureGates()
	clientfeatures.ReplaceFeatureGates(watchListGate{on: on, rest: prev})
	return func() {
		clientfeatures.ReplaceFeatureGates(prev)
		gateMu.Unlock()
	}
}
