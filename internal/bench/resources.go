package bench

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// ResourceNames are the resources cachebench can seed and cache, by the names
// its flags take, in the order it lists them.
var ResourceNames = []string{"pods", "configmaps", "secrets", "nodes", "widgets"}

// ResourceByName maps each of ResourceNames to its resource.
var ResourceByName = map[string]schema.GroupVersionResource{
	"pods":       dataset.PodsGVR,
	"configmaps": dataset.ConfigMapsGVR,
	"secrets":    dataset.SecretsGVR,
	"nodes":      dataset.NodesGVR,
	"widgets":    dataset.WidgetGVR,
}

// ModesFor returns the modes of modes that can cache gvr alone.
func ModesFor(modes []Mode, gvr schema.GroupVersionResource) []Mode {
	var out []Mode
	for _, m := range modes {
		if m.CanCache(gvr, false) {
			out = append(out, m)
		}
	}
	return out
}
