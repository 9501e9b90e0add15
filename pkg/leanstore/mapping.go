package leanstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// resourceMapping maps a built-in kind to its resource name and scope. It asks the
// server's discovery document once, on the first list, so that informers never rely
// on guessing plurals; until then it uses the resource it was given.
type resourceMapping struct {
	gvk  schema.GroupVersionKind
	disc rest.Interface // discovery REST client; nil when unavailable
	// known is true when res is the resource's real name (read from the
	// request of a caller's informer), not a guess from the kind.
	known bool

	mu       sync.Mutex
	res      string
	scoped   bool
	resolved bool
}

// newResourceMapping maps gvk; resource is its resource's name when the caller
// knows it, or "" to guess it from the kind until discovery says.
func newResourceMapping(gvk schema.GroupVersionKind, resource string, disc rest.Interface) *resourceMapping {
	m := &resourceMapping{gvk: gvk, disc: disc, res: resource, known: resource != "", scoped: true}
	if !m.known {
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		m.res = plural.Resource
	}
	return m
}

func (m *resourceMapping) resource() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.res
}

func (m *resourceMapping) namespaced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.scoped
}

func (m *resourceMapping) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: m.gvk.Group, Resource: m.resource()}
}

func (m *resourceMapping) resolve(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.resolved || m.disc == nil {
		return nil
	}
	path := "/apis/" + m.gvk.Group + "/" + m.gvk.Version
	if m.gvk.Group == "" {
		path = "/api/" + m.gvk.Version
	}
	raw, err := m.disc.Get().AbsPath(path).Do(ctx).Raw()
	if err != nil {
		return fmt.Errorf("discover the resources of %s at %s: %w", m.gvk.GroupVersion(), path, err)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("decode the discovery of %s at %s: %w", m.gvk.GroupVersion(), path, err)
	}
	for _, r := range list.APIResources {
		if isSubresource(r.Name) {
			continue
		}
		if (m.known && r.Name == m.res) || (!m.known && r.Kind == m.gvk.Kind) {
			m.res, m.scoped, m.resolved = r.Name, r.Namespaced, true
			return nil
		}
	}
	if m.known {
		return fmt.Errorf("the server does not serve resource %s in %s (discovery at %s)", m.res, m.gvk.GroupVersion(), path)
	}
	return fmt.Errorf("the server does not serve kind %s in %s (discovery at %s)", m.gvk.Kind, m.gvk.GroupVersion(), path)
}

func isSubresource(name string) bool {
	for _, c := range name {
		if c == '/' {
			return true
		}
	}
	return false
}
