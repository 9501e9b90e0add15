package wire

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// The fuzz targets compare the lean decoder with apimachinery's own protobuf
// decoder on any input: the lean decoder either returns what apimachinery
// decodes (stripped the same way), or an error; never a panic, never a list
// shorter than the one the bytes carry. `go test -fuzz FuzzDecodeList` runs
// one; the seed corpus is under testdata/fuzz.

var fuzzCodec = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

func fuzzSeedList(t testing.TB, n int) []byte {
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "c"}}
	for i := range n {
		list.Items = append(list.Items, *testPod(string(rune('a'+i)), "7"))
	}
	var buf bytes.Buffer
	if err := fuzzCodec.Encode(list, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// apimachineryList decodes body as client-go's typed client does.
func apimachineryList(body []byte) (*corev1.PodList, error) {
	obj, _, err := fuzzCodec.Decode(body, nil, &corev1.PodList{})
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.PodList), nil
}

func FuzzDecodeList(f *testing.F) {
	for _, n := range []int{0, 1, 3} {
		seed := fuzzSeedList(f, n)
		f.Add(seed)
		f.Add(seed[:len(seed)/2])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, strip := range []Strip{
			{},
			{ManagedFields: true, Annotations: map[string]bool{lastApplied: true}},
		} {
			d := NewDecoder(newPod, podsGR, strip, testCaller{})
			var got listed
			rv, cont, err := d.List(bytes.NewReader(body), got.item)
			if err != nil {
				continue
			}
			want, werr := apimachineryList(body)
			if werr != nil {
				if len(strip.Annotations) == 0 {
					// Nothing is skipped without stripping: the lean decoder
					// reads every byte apimachinery reads.
					t.Fatalf("the lean decoder decoded %d items where apimachinery fails: %v", len(got.items), werr)
				}
				continue // corruption inside a stripped field, never decoded
			}
			if len(got.items) != len(want.Items) || rv != want.ResourceVersion || cont != want.Continue {
				t.Fatalf("lean: %d items at %q (continue %q); apimachinery: %d at %q (%q)",
					len(got.items), rv, cont, len(want.Items), want.ResourceVersion, want.Continue)
			}
			for i := range want.Items {
				w := &want.Items[i]
				stripDecoded(t, w, strip)
				if !equality.Semantic.DeepEqual(w, got.items[i]) {
					t.Fatalf("item %d differs (-apimachinery +lean):\n%s", i, cmp.Diff(w, got.items[i]))
				}
			}
		}
	})
}

// FuzzDecodeWatchEvent compares one watch frame's decoding.
func FuzzDecodeWatchEvent(f *testing.F) {
	for _, typ := range []string{"ADDED", "MODIFIED", "DELETED"} {
		var raw bytes.Buffer
		if err := fuzzCodec.Encode(testPod("a", "9"), &raw); err != nil {
			f.Fatal(err)
		}
		ev := &metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: raw.Bytes()}}
		frame, err := ev.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		w := &Watch{d: NewDecoder(newPod, podsGR, Strip{}, testCaller{})}
		got, err := w.event(frame)
		if err != nil || got.Object == nil {
			return
		}
		var ev metav1.WatchEvent
		if err := ev.Unmarshal(frame); err != nil {
			t.Fatalf("the lean decoder decoded a %s event from a frame apimachinery cannot read: %v", got.Type, err)
		}
		if string(got.Type) != ev.Type {
			t.Fatalf("type %q, apimachinery %q", got.Type, ev.Type)
		}
		if got.Type == "BOOKMARK" || got.Type == "ERROR" {
			return
		}
		want, _, err := fuzzCodec.Decode(ev.Object.Raw, nil, &corev1.Pod{})
		if err != nil {
			t.Fatalf("the lean decoder decoded an object apimachinery cannot: %v", err)
		}
		want.(*corev1.Pod).TypeMeta = metav1.TypeMeta{} // typed clients clear it too
		if !equality.Semantic.DeepEqual(want, got.Object) {
			t.Fatalf("object differs (-apimachinery +lean):\n%s", cmp.Diff(want, got.Object))
		}
	})
}

// FuzzDecodeTakingUnchanged decodes a held version and then a next one with a
// decoder that takes the next one's unchanged top-level fields from the held
// one (TakeUnchanged, shared and copied): the next one must decode as
// apimachinery decodes its bytes alone, whatever the two messages hold.
func FuzzDecodeTakingUnchanged(f *testing.F) {
	msg := func(p *corev1.Pod) []byte {
		var buf bytes.Buffer
		if err := fuzzCodec.Encode(p, &buf); err != nil {
			f.Fatal(err)
		}
		_, m, err := Unwrap(buf.Bytes())
		if err != nil {
			f.Fatal(err)
		}
		return m
	}
	v1 := testPod("a", "1")
	v1.Spec.Containers[0].Args = []string{"--a-long-enough-argument-for-the-spec-to-be-digested"}
	v2 := v1.DeepCopy()
	v2.ResourceVersion, v2.Status.Message = "2", "patched"
	v3 := v2.DeepCopy()
	v3.ResourceVersion, v3.Spec.Containers[0].Image = "3", "img:2"
	f.Add(msg(v1), msg(v2))
	f.Add(msg(v1), msg(v3))
	f.Add(msg(v2), append(msg(v2), msg(v3)...)) // every field twice
	extra, err := (&corev1.PodSpec{Containers: []corev1.Container{{Name: "x"}}}).Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(msg(v1), appendField(msg(v2), 2, protowire.BytesType, extra)) // a short second spec
	f.Fuzz(func(t *testing.T, held, next []byte) {
		for _, deepCopy := range []bool{false, true} {
			c := &priorCaller{held: map[string]runtime.Object{}, sums: map[string]FieldSums{}}
			d := NewDecoder(newPod, podsGR, Strip{}, c)
			d.TakeUnchanged(c, deepCopy)
			h, _, err := d.Object(held)
			if err != nil || h == nil {
				return
			}
			c.held[h.(*corev1.Pod).Name] = h
			got, _, err := d.Object(next)
			if err != nil || got == nil {
				continue
			}
			want := &corev1.Pod{}
			if err := want.Unmarshal(next); err != nil {
				t.Fatalf("the lean decoder decoded a message apimachinery cannot read: %v", err)
			}
			if !equality.Semantic.DeepEqual(want, got) {
				t.Fatalf("next differs (-apimachinery +lean, copy %v):\n%s", deepCopy, cmp.Diff(want, got))
			}
		}
	})
}
