package shrink

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

// TestEqualResourceListsAgreesWithDeepEqual compares resource lists along
// their plan (in memory) and through reflect.Value (a map value) as
// reflect.DeepEqual does: a Quantity of the same amount written otherwise, or
// whose string form one of them has cached, differs.
func TestEqualResourceListsAgreesWithDeepEqual(t *testing.T) {
	q := resource.MustParse
	uncached := q("0.25") // not in canonical form: no string form kept
	cached := uncached.DeepCopy()
	_ = cached.String() // caches the canonical string form, 250m
	// More digits than an int64 holds: an inf.Dec, behind a pointer.
	big1, big2, big3 := q("123456789012345678901234567890"), q("123456789012345678901234567890"), q("123456789012345678901234567891")
	if reflect.DeepEqual(uncached, cached) || reflect.DeepEqual(big1, big3) || !reflect.DeepEqual(big1, big2) {
		t.Fatal("the quantities do not differ as this test needs")
	}
	lists := []corev1.ResourceList{
		nil,
		{},
		{"cpu": q("1")},
		{"cpu": q("1000m")},
		{"cpu": q("1")},
		{"cpu": q("250m")},
		{"cpu": uncached},
		{"cpu": cached},
		{"memory": q("1")},
		{"cpu": q("1"), "memory": q("64Mi")},
		{"cpu": q("1"), "memory": q("64Mi")},
		{"cpu": q("1"), "memory": q("65Mi")},
		{"cpu": big1},
		{"cpu": big2},
		{"cpu": big3},
	}
	n := 0
	for _, a := range lists {
		for _, b := range lists {
			want := reflect.DeepEqual(a, b)
			// In memory, along the plan, as a field of a struct is.
			ra, rb := corev1.ResourceRequirements{Limits: a}, corev1.ResourceRequirements{Limits: b}
			if got := equalValues(reflect.ValueOf(&ra).Elem(), reflect.ValueOf(&rb).Elem()); got != want {
				t.Errorf("plan: equal(%v, %v) = %v, DeepEqual %v", a, b, got, want)
			}
			// A map value, through reflect.Value.
			if got := equalValues(reflect.ValueOf(a), reflect.ValueOf(b)); got != want {
				t.Errorf("reflect: equal(%v, %v) = %v, DeepEqual %v", a, b, got, want)
			}
			if want {
				n++
			}
		}
	}
	if n <= len(lists) {
		t.Errorf("only %d equal pairs: the test compares no two equal lists held apart", n)
	}
}

// TestEqualResourceListsAllocatesNothing: comparing two equal resource lists
// reads their Quantities without copying them to the heap.
func TestEqualResourceListsAllocatesNothing(t *testing.T) {
	a := corev1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("128Mi")}
	b := a.DeepCopy()
	plan := eqPlanOf(quantityType)
	if allocs := testing.AllocsPerRun(100, func() {
		if !equalResourceLists(a, b, plan) {
			t.Fatal("equal lists compared unequal")
		}
	}); allocs != 0 {
		t.Errorf("comparing two resource lists made %.0f allocations, want 0", allocs)
	}
}
