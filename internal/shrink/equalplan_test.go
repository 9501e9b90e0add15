package shrink

import (
	"reflect"
	"testing"
)

// node is a recursive type with every kind of part a plan compares.
type node struct {
	Name  string
	On    bool
	N     int32
	Size  int64
	Raw   []byte
	Next  *node
	Kids  []node
	Tags  map[string]string
	Other map[string]int
	Any   any
	Pair  [2]string
}

// TestEqualPlanAgreesWithDeepEqual compares pairs of values that differ in
// one part each, nil against empty included, in memory (along the plan) and
// as DeepEqual does.
func TestEqualPlanAgreesWithDeepEqual(t *testing.T) {
	base := func() node {
		return node{Name: "a", On: true, N: 3, Size: 5, Raw: []byte("xy"),
			Next: &node{Name: "b", Kids: []node{{Name: "c"}}},
			Kids: []node{{Name: "d", Tags: map[string]string{"k": "v"}}},
			Tags: map[string]string{"k": "v"}, Other: map[string]int{"i": 1}, Any: []any{"s", int64(1)},
			Pair: [2]string{"p", "q"}}
	}
	changes := map[string]func(*node){
		"same":              func(*node) {},
		"name":              func(n *node) { n.Name = "z" },
		"bool":              func(n *node) { n.On = false },
		"int32":             func(n *node) { n.N = 4 },
		"int64":             func(n *node) { n.Size = 6 },
		"bytes":             func(n *node) { n.Raw = []byte("xz") },
		"bytes nil":         func(n *node) { n.Raw = nil },
		"bytes empty":       func(n *node) { n.Raw = []byte{} },
		"next nil":          func(n *node) { n.Next = nil },
		"next deep":         func(n *node) { n.Next.Kids[0].Name = "z" },
		"kids longer":       func(n *node) { n.Kids = append(n.Kids, node{}) },
		"kids nil":          func(n *node) { n.Kids = nil },
		"kids empty":        func(n *node) { n.Kids = []node{} },
		"kid's tags":        func(n *node) { n.Kids[0].Tags["k"] = "w" },
		"tags key":          func(n *node) { n.Tags = map[string]string{"j": "v"} },
		"tags nil":          func(n *node) { n.Tags = nil },
		"tags empty":        func(n *node) { n.Tags = map[string]string{} },
		"other map":         func(n *node) { n.Other["i"] = 2 },
		"any":               func(n *node) { n.Any = []any{"s", int64(2)} },
		"any type":          func(n *node) { n.Any = []any{"s", int32(1)} },
		"array":             func(n *node) { n.Pair[1] = "r" },
		"empty":             func(n *node) { *n = node{} },
		"next is a new one": func(n *node) { n.Next = &node{Name: "b", Kids: []node{{Name: "c"}}} },
	}
	for name, change := range changes {
		a, b := base(), base()
		change(&b)
		want := reflect.DeepEqual(a, b)
		for _, pair := range [][2]*node{{&a, &b}, {&b, &a}} {
			x, y := reflect.ValueOf(pair[0]).Elem(), reflect.ValueOf(pair[1]).Elem()
			if got := equalValues(x, y); got != want {
				t.Errorf("%s: equalValues = %v, DeepEqual %v", name, got, want)
			}
			if got := eqPlanOf(x.Type()).equal(x.Addr().UnsafePointer(), y.Addr().UnsafePointer()); got != want {
				t.Errorf("%s: the plan says %v, DeepEqual %v", name, got, want)
			}
		}
	}
}
