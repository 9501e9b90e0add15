package conformance

import (
	"sync"

	clientfeatures "k8s.io/client-go/features"
)

// gatesMu serialises the runs that change client-go's feature gates, which
// are process-wide.
var gatesMu sync.Mutex

// overrideGates is client-go's feature gates with some features set.
type overrideGates struct {
	clientfeatures.Gates
	set map[clientfeatures.Feature]bool
}

func (g overrideGates) Enabled(f clientfeatures.Feature) bool {
	if v, ok := g.set[f]; ok {
		return v
	}
	return g.Gates.Enabled(f)
}

// withGates sets client-go features for the informers started until the
// returned function restores them. client-go reads the gates when an informer
// starts, so informers started meanwhile keep the setting for good.
func withGates(set map[clientfeatures.Feature]bool) (restore func()) {
	if len(set) == 0 {
		return func() {}
	}
	gatesMu.Lock()
	old := clientfeatures.FeatureGates()
	clientfeatures.ReplaceFeatureGates(overrideGates{Gates: old, set: set})
	return func() {
		clientfeatures.ReplaceFeatureGates(old)
		gatesMu.Unlock()
	}
}
