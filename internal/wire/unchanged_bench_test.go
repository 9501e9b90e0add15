package wire

import (
	"bytes"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/cachetune/cachetune/internal/fixture"
)

// BenchmarkDecodeTakingUnchanged decodes the fixture's Pods (read back from a
// real kube-apiserver, managedFields stripped on the wire) as an informer
// does, per Pod:
//
//   - plain: without TakeUnchanged, as under a transform or the encoded store;
//   - listed: with TakeUnchanged and nothing held, what a start-up list pays
//     for the digests it keeps (the Prior lookup, two digests, Decoded);
//   - patched-shared, patched-copied: a status patch of a held version, whose
//     spec is taken, shared (WithSharing) or deep-copied (the defaults).
func BenchmarkDecodeTakingUnchanged(b *testing.B) {
	pods := fixturePods(b)
	encode := func(p *corev1.Pod) []byte {
		var buf bytes.Buffer
		if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(p, &buf); err != nil {
			b.Fatal(err)
		}
		_, msg, err := Unwrap(buf.Bytes())
		if err != nil {
			b.Fatal(err)
		}
		return msg
	}
	listed := make([][]byte, len(pods))
	patched := make([][]byte, len(pods))
	for i, p := range pods {
		listed[i] = encode(p)
		q := p.DeepCopy()
		rv, _ := strconv.Atoi(q.ResourceVersion)
		q.ResourceVersion = strconv.Itoa(rv + 1_000_000)
		q.Status.Message = "patched"
		patched[i] = encode(q)
	}
	strip := Strip{ManagedFields: true}
	run := func(b *testing.B, take, deepCopy bool, msgs [][]byte, hold bool) {
		c := &frozenPrior{priorCaller: priorCaller{held: map[string]runtime.Object{}, sums: map[string]FieldSums{}}}
		d := NewDecoder(newPod, podsGR, strip, c)
		if take {
			d.TakeUnchanged(c, deepCopy)
		}
		if hold {
			for _, m := range listed {
				obj, _, err := d.Object(m)
				if err != nil {
					b.Fatal(err)
				}
				c.held[obj.(*corev1.Pod).Name] = obj
			}
			// Every patched version is then decoded against the listed one.
			c.frozen = true
		}
		i := 0
		for b.Loop() {
			if _, _, err := d.Object(msgs[i%len(msgs)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
		if hold && take && d.Taken() == 0 {
			b.Fatal("no field taken from a held version")
		}
	}
	b.Run("listed-plain", func(b *testing.B) { run(b, false, false, listed, false) })
	b.Run("listed", func(b *testing.B) { run(b, true, true, listed, false) })
	b.Run("patched-plain", func(b *testing.B) { run(b, false, false, patched, true) })
	b.Run("patched-shared", func(b *testing.B) { run(b, true, false, patched, true) })
	b.Run("patched-copied", func(b *testing.B) { run(b, true, true, patched, true) })
}

// frozenPrior is priorCaller whose digests stop changing once frozen.
type frozenPrior struct {
	priorCaller
	frozen bool
}

func (c *frozenPrior) Decoded(id Identity, sums FieldSums) {
	if !c.frozen {
		c.priorCaller.Decoded(id, sums)
	}
}

// fixturePods are the Pods of bench/testdata/pods.json.
func fixturePods(tb testing.TB) []*corev1.Pod {
	tb.Helper()
	pods := fixture.Pods(tb)
	out := make([]*corev1.Pod, len(pods))
	for i := range pods {
		out[i] = &pods[i]
	}
	return out
}
