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
// on guessing plurals; until then it uses the usual guess.
type resourceMapping struct {
	gvk  schema.GroupVersionKind
	disc rest.Interface // discovery REST client; nil when unavailable

	mu       sync.Mutex
	res      string
	scoped   bool
	resolved bool
}

func newResourceMapping(gvk schema.GroupVersionKind, disc rest.Interface) *resourceMapping {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return &resourceMapping{gvk: gvk, disc: disc, res: plural.Resource, scoped: true}
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
		return fmt.Errorf("discover resources of %s: %w", m.gvk.GroupVersion(), err)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("decode discovery of %s: %w", m.gvk.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Kind == m.gvk.Kind && !isSubresource(r.Name) {
			m.res, m.scoped, m.resolved = r.Name, r.Namespaced, true
			return nil
		}
	}
	return fmt.Errorf("the server does not serve kind %s in %s", m.gvk.Kind, m.gvk.GroupVersion())
}

func isSubresource(name string) bool {
	for _, c := range name {
		if c == '/' {
			return true
		}
	}
	return false
}
