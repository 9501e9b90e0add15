package doctor

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// target is one resource to examine, as discovery describes it.
type target struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	// builtIn kinds are in client-go's scheme: the server sends them as
	// protobuf and typed informers cache them.
	builtIn bool
}

// name is the group-qualified plural, as kubectl prints it.
func (t target) name() string { return t.gvr.GroupResource().String() }

// servedResource is one entry of discovery.
type servedResource struct {
	gv  schema.GroupVersion
	res metav1.APIResource
}

// served flattens discovery's preferred resources, without subresources, in a
// stable order: the core group first, then groups by name.
func served(lists []*metav1.APIResourceList) []servedResource {
	var out []servedResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			out = append(out, servedResource{gv, r})
		}
	}
	slices.SortStableFunc(out, func(a, b servedResource) int {
		if c := strings.Compare(a.gv.Group, b.gv.Group); c != 0 {
			return c
		}
		return strings.Compare(a.res.Name, b.res.Name)
	})
	return out
}

// resolve turns the names the user gave into targets. "all" is every served
// resource that can be listed and watched (namespaced ones only when a
// namespace is given). An unknown name, or one that cannot be listed and
// watched, is an error.
func resolve(names []string, all []servedResource, namespace string) ([]target, error) {
	var out []target
	seen := map[schema.GroupVersionResource]bool{}
	add := func(s servedResource) {
		t := targetOf(s)
		if !seen[t.gvr] {
			seen[t.gvr] = true
			out = append(out, t)
		}
	}
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "all" {
			for _, s := range all {
				if listable(s.res) && (namespace == "" || s.res.Namespaced) {
					add(s)
				}
			}
			continue
		}
		s, ok := lookup(n, all)
		if !ok {
			return nil, fmt.Errorf("%w: the cluster serves no resource named %q", ErrOption, n)
		}
		if !listable(s.res) {
			return nil, fmt.Errorf("%w: %s cannot be listed and watched (verbs: %s)", ErrOption, targetOf(s).name(), strings.Join(s.res.Verbs, ","))
		}
		add(s)
	}
	return out, nil
}

func targetOf(s servedResource) target {
	gvr := s.gv.WithResource(s.res.Name)
	gvk := s.gv.WithKind(s.res.Kind)
	return target{gvr: gvr, kind: s.res.Kind, namespaced: s.res.Namespaced, builtIn: scheme.Scheme.Recognizes(gvk)}
}

func listable(r metav1.APIResource) bool {
	return slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch")
}

// lookup finds a resource by plural, plural.group, singular, kind or short
// name, preferring the core group (the order of all), as kubectl does.
func lookup(name string, all []servedResource) (servedResource, bool) {
	matches := func(s servedResource, n string) bool {
		r := s.res
		return n == r.Name || n == r.SingularName || n == strings.ToLower(r.Kind) || slices.Contains(r.ShortNames, n)
	}
	for _, s := range all {
		if matches(s, name) {
			return s, true
		}
	}
	// Group-qualified: the resource part, then the group.
	if res, group, ok := strings.Cut(name, "."); ok {
		for _, s := range all {
			if s.gv.Group == group && matches(s, res) {
				return s, true
			}
		}
	}
	return servedResource{}, false
}
