package wire

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// priorCaller holds the last object decoded for each name, with its digests,
// as a cache that shares unchanged parts between versions would.
type priorCaller struct {
	testCaller
	held map[string]runtime.Object
	sums map[string]FieldSums
}

func (c *priorCaller) Prior(id Identity) (runtime.Object, FieldSums, bool) {
	obj, ok := c.held[string(id.Name)]
	if !ok {
		return nil, FieldSums{}, false
	}
	m := obj.(metav1.Object)
	s := c.sums[string(id.Name)]
	return obj, s, VersionOfStrings(string(m.GetUID()), m.GetResourceVersion()) == s.Version
}

func (c *priorCaller) Decoded(id Identity, sums FieldSums) { c.sums[string(id.Name)] = sums }

// TestDecoderTakesUnchangedFields decodes versions of a Pod one after the
// other, each held once decoded: a version whose spec is encoded as the held
// one's takes the held spec (the same containers array) and decodes the rest;
// a changed spec, or a held version the digests are not of, is decoded.
func TestDecoderTakesUnchangedFields(t *testing.T) {
	t.Run("shared", func(t *testing.T) { testTakesUnchanged(t, false) })
	t.Run("copied", func(t *testing.T) { testTakesUnchanged(t, true) })
}

func testTakesUnchanged(t *testing.T, deepCopy bool) {
	s := Strip{ManagedFields: true}
	c := &priorCaller{held: map[string]runtime.Object{}, sums: map[string]FieldSums{}}
	d := NewDecoder(newPod, podsGR, s, c)
	d.TakeUnchanged(c, deepCopy)
	decode := func(p *corev1.Pod) *corev1.Pod {
		t.Helper()
		_, msg, err := Unwrap(encodePod(t, p))
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := d.Object(msg)
		if err != nil {
			t.Fatal(err)
		}
		want := p.DeepCopy()
		want.TypeMeta, want.ManagedFields = metav1.TypeMeta{}, nil
		if !equality.Semantic.DeepEqual(want, got) {
			t.Fatalf("rv %s: decoded object differs (-want +got):\n%s", p.ResourceVersion, cmp.Diff(want, got))
		}
		return got.(*corev1.Pod)
	}
	// took reports whether b took a's spec: shared, b's containers are a's;
	// copied, they are not, and the decoder's count tells.
	var taken int
	took := func(a, b *corev1.Pod) bool {
		n := d.Taken() - taken
		taken = d.Taken()
		shares := &a.Spec.Containers[0] == &b.Spec.Containers[0]
		if deepCopy {
			if shares || &a.Spec.Containers[0].Args[0] == &b.Spec.Containers[0].Args[0] {
				t.Fatal("a copied spec shares the held version's containers")
			}
			return n > 0
		}
		if shares != (n > 0) {
			t.Fatalf("%d fields taken, containers shared: %v", n, shares)
		}
		return shares
	}

	v1 := testPod("a", "1")
	v1.Spec.Containers[0].Args = []string{"--a-long-enough-argument-for-the-spec-to-be-digested", "--and-another-one"}
	got1 := decode(v1)
	c.held["a"] = got1
	taken = d.Taken()

	v2 := v1.DeepCopy()
	v2.ResourceVersion, v2.Status.Message = "2", "patched"
	got2 := decode(v2)
	if !took(got1, got2) {
		t.Error("a status patch decoded the unchanged spec again instead of taking the held one")
	}
	c.held["a"] = got2

	v3 := v2.DeepCopy()
	v3.ResourceVersion, v3.Spec.Containers[0].Image = "3", "img:2"
	got3 := decode(v3)
	if took(got2, got3) {
		t.Error("a changed spec took the held version's")
	}

	// The digests are of version 3 now, but version 2 is still held (the
	// cache has not been handed version 3): version 4, with version 3's spec,
	// must not take version 2's.
	v4 := v3.DeepCopy()
	v4.ResourceVersion, v4.Status.Message = "4", "again"
	got4 := decode(v4)
	if took(got2, got4) {
		t.Error("digests of version 3 vouched for the spec of the held version 2")
	}
}

// TestDecoderTakesNothingFromARepeatedField: protobuf merges two occurrences
// of a message field, so a message whose spec comes twice (a short second
// one: an extra container) is decoded whole, as the generated code would,
// even where its first spec is the held version's.
func TestDecoderTakesNothingFromARepeatedField(t *testing.T) {
	c := &priorCaller{held: map[string]runtime.Object{}, sums: map[string]FieldSums{}}
	d := NewDecoder(newPod, podsGR, Strip{}, c)
	d.TakeUnchanged(c, false)
	v1 := testPod("a", "1")
	v1.ManagedFields = nil
	v1.Spec.Containers[0].Args = []string{"--a-long-enough-argument-for-the-spec-to-be-digested"}
	_, msg1, err := Unwrap(encodePod(t, v1))
	if err != nil {
		t.Fatal(err)
	}
	got1, _, err := d.Object(msg1)
	if err != nil {
		t.Fatal(err)
	}
	c.held["a"] = got1

	v2 := v1.DeepCopy()
	v2.ResourceVersion = "2"
	_, msg2, err := Unwrap(encodePod(t, v2))
	if err != nil {
		t.Fatal(err)
	}
	extra, err := (&corev1.PodSpec{Containers: []corev1.Container{{Name: "x"}}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	msg2 = appendField(append([]byte(nil), msg2...), 2, protowire.BytesType, extra)
	want := &corev1.Pod{}
	if err := want.Unmarshal(msg2); err != nil {
		t.Fatal(err)
	}
	got, _, err := d.Object(msg2)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Spec.Containers) != 2 || !equality.Semantic.DeepEqual(want, got) {
		t.Fatalf("a spec sent twice decoded unlike the generated code (-want +got):\n%s", cmp.Diff(want, got))
	}
	if d.Taken() != 0 {
		t.Errorf("%d fields taken from a message with a repeated spec", d.Taken())
	}
}
