package doctor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cachetune/cachetune/pkg/leanstore"
)

// largestKept is how many of the largest objects a report lists.
const largestKept = 5

// topNamespacesKept is how many of the fullest namespaces a report lists.
const topNamespacesKept = 3

// sizes accumulates the JSON sizes of a resource's objects, page by page,
// measured on the bytes the server sent: what `kubectl get -o json` shows.
type sizes struct {
	objects       int
	json          int64
	managedFields int64
	lastApplied   int64
	keyBytes      int64 // the informer store's keys: namespace/name
	namespaces    map[string]int
	largest       []Object
}

// jsonPage is a list response, items left undecoded.
type jsonPage struct {
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// jsonMeta is the part of an item the sizes need.
type jsonMeta struct {
	Metadata struct {
		Name          string            `json:"name"`
		Namespace     string            `json:"namespace"`
		ManagedFields json.RawMessage   `json:"managedFields"`
		Annotations   map[string]string `json:"annotations"`
	} `json:"metadata"`
}

// parseJSONPage splits a JSON list response into its items.
func parseJSONPage(raw []byte) (jsonPage, error) {
	var p jsonPage
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, fmt.Errorf("decode list: %w", err)
	}
	return p, nil
}

// add measures one item: its JSON length, the JSON of its managedFields and
// the length of its last-applied annotation (as pkg/testkit/dataset.Measure does).
func (s *sizes) add(item json.RawMessage) error {
	var m jsonMeta
	if err := json.Unmarshal(item, &m); err != nil {
		return fmt.Errorf("decode item %d: %w", s.objects, err)
	}
	md := &m.Metadata
	o := Object{Namespace: md.Namespace, Name: md.Name, JSON: int64(len(item))}
	if mf := bytes.TrimSpace(md.ManagedFields); len(mf) > 0 && !bytes.Equal(mf, []byte("null")) && !bytes.Equal(mf, []byte("[]")) {
		o.ManagedFields = int64(len(mf))
	}
	o.LastApplied = int64(len(md.Annotations[leanstore.LastAppliedAnnotation]))

	s.objects++
	s.json += o.JSON
	s.managedFields += o.ManagedFields
	s.lastApplied += o.LastApplied
	s.keyBytes += int64(len(md.Name))
	if md.Namespace != "" {
		s.keyBytes += int64(len(md.Namespace)) + 1
		if s.namespaces == nil {
			s.namespaces = map[string]int{}
		}
		s.namespaces[md.Namespace]++
	}
	s.keep(o)
	return nil
}

// keep keeps o if it is among the largest so far.
func (s *sizes) keep(o Object) {
	if len(s.largest) == largestKept && o.JSON <= s.largest[largestKept-1].JSON {
		return
	}
	i, _ := slices.BinarySearchFunc(s.largest, o, func(a, b Object) int {
		switch {
		case a.JSON > b.JSON:
			return -1
		case a.JSON < b.JSON:
			return 1
		}
		return 0
	})
	s.largest = slices.Insert(s.largest, i, o)
	if len(s.largest) > largestKept {
		s.largest = s.largest[:largestKept]
	}
}

// fill writes the sizes into r.
func (s *sizes) fill(r *Resource) {
	r.Objects = s.objects
	r.Largest = s.largest
	r.Namespaces = len(s.namespaces)
	r.TopNamespaces = topNamespaces(s.namespaces, topNamespacesKept)
	r.JSON = Bytes{Total: s.json}
	r.ManagedFields = Share{Total: s.managedFields}
	r.LastApplied = Share{Total: s.lastApplied}
	if s.objects == 0 {
		return
	}
	n := float64(s.objects)
	r.JSON.PerObject = float64(s.json) / n
	r.ManagedFields.PerObject = float64(s.managedFields) / n
	r.LastApplied.PerObject = float64(s.lastApplied) / n
	if s.json > 0 {
		r.ManagedFields.Share = float64(s.managedFields) / float64(s.json)
		r.LastApplied.Share = float64(s.lastApplied) / float64(s.json)
	}
}

// meanKey is the mean length of the store keys.
func (s *sizes) meanKey() float64 {
	if s.objects == 0 {
		return 0
	}
	return float64(s.keyBytes) / float64(s.objects)
}

func topNamespaces(counts map[string]int, n int) []NamespaceCount {
	out := make([]NamespaceCount, 0, len(counts))
	for ns, c := range counts {
		out = append(out, NamespaceCount{ns, c})
	}
	slices.SortFunc(out, func(a, b NamespaceCount) int {
		if a.Objects != b.Objects {
			return b.Objects - a.Objects
		}
		return strings.Compare(a.Namespace, b.Namespace)
	})
	if len(out) > n {
		out = out[:n]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
