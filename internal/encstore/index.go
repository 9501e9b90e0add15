package encstore

import (
	"fmt"
	"sort"

	"k8s.io/client-go/tools/cache"
)

// index holds a store's indexes: for each, the keys of the objects under each
// value. Objects' values are computed once, when an object is stored, and
// kept beside its bytes, so that an update or a delete never decodes the old
// object to find what to remove. Values are kept once per index: every
// object's copy of a value (its namespace, say) is the index's own string.
type index struct {
	names []string
	funcs []cache.IndexFunc
	// sets are, per index (in the order of names), the keys under each value.
	sets []map[string]*valueSet
}

type valueSet struct {
	value string
	keys  map[string]struct{}
}

func newIndex() *index { return &index{} }

func (x *index) position(name string) int {
	for i, n := range x.names {
		if n == name {
			return i
		}
	}
	return -1
}

// add adds indexers; a name already present is an error, and adds nothing.
func (x *index) add(indexers cache.Indexers) error {
	var conflict []string
	for name := range indexers {
		if x.position(name) >= 0 {
			conflict = append(conflict, name)
		}
	}
	if len(conflict) > 0 {
		sort.Strings(conflict)
		return fmt.Errorf("indexer conflict: %v", conflict)
	}
	names := make([]string, 0, len(indexers))
	for name := range indexers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		x.names = append(x.names, name)
		x.funcs = append(x.funcs, indexers[name])
		x.sets = append(x.sets, map[string]*valueSet{})
	}
	return nil
}

// remove takes back indexers that add just added (the last ones), when their
// values could not be computed.
func (x *index) remove(indexers cache.Indexers) {
	n := len(x.names) - len(indexers)
	x.names, x.funcs, x.sets = x.names[:n], x.funcs[:n], x.sets[:n]
}

// values computes obj's values on every index, as the index's own strings.
func (x *index) values(key string, obj any) ([][]string, error) {
	if len(x.funcs) == 0 {
		return nil, nil
	}
	out := make([][]string, len(x.funcs))
	for i, f := range x.funcs {
		vs, err := f(obj)
		if err != nil {
			return nil, fmt.Errorf("encstore: index %q of %s: %w", x.names[i], key, err)
		}
		for j, v := range vs {
			if s, ok := x.sets[i][v]; ok {
				vs[j] = s.value
			}
		}
		out[i] = vs
	}
	return out, nil
}

func at(values [][]string, i int) []string {
	if i < len(values) {
		return values[i]
	}
	return nil
}

// update moves key from its old values to its new ones.
func (x *index) update(key string, old, new [][]string) {
	for i := range x.names {
		o, n := at(old, i), at(new, i)
		if len(o) == 1 && len(n) == 1 && o[0] == n[0] {
			continue
		}
		for _, v := range o {
			if s := x.sets[i][v]; s != nil {
				delete(s.keys, key)
				if len(s.keys) == 0 {
					delete(x.sets[i], v)
				}
			}
		}
		for _, v := range n {
			s := x.sets[i][v]
			if s == nil {
				s = &valueSet{value: v, keys: map[string]struct{}{}}
				x.sets[i][v] = s
			}
			s.keys[key] = struct{}{}
		}
	}
}

func errNoIndex(name string) error {
	return fmt.Errorf("index with name %s does not exist", name)
}

// keysOf returns the keys under value on the named index; the caller must
// not change the set, and reads it under the store's lock.
func (x *index) keysOf(name, value string) (map[string]struct{}, error) {
	i := x.position(name)
	if i < 0 {
		return nil, errNoIndex(name)
	}
	if s := x.sets[i][value]; s != nil {
		return s.keys, nil
	}
	return nil, nil
}

// keysFor returns the keys that share a value with obj on the named index.
func (x *index) keysFor(name string, obj any) (map[string]struct{}, error) {
	i := x.position(name)
	if i < 0 {
		return nil, errNoIndex(name)
	}
	vs, err := x.funcs[i](obj)
	if err != nil {
		return nil, err
	}
	if len(vs) == 1 {
		return x.keysOf(name, vs[0])
	}
	keys := map[string]struct{}{}
	for _, v := range vs {
		if s := x.sets[i][v]; s != nil {
			for k := range s.keys {
				keys[k] = struct{}{}
			}
		}
	}
	return keys, nil
}

func (x *index) valuesOf(name string) []string {
	i := x.position(name)
	if i < 0 {
		return []string{}
	}
	out := make([]string, 0, len(x.sets[i]))
	for v := range x.sets[i] {
		out = append(out, v)
	}
	return out
}

func (x *index) indexers() cache.Indexers {
	out := make(cache.Indexers, len(x.names))
	for i, n := range x.names {
		out[n] = x.funcs[i]
	}
	return out
}
