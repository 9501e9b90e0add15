package reflector

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/cachetune/cachetune/internal/shrink"
	"github.com/cachetune/cachetune/internal/wire"
	"github.com/cachetune/cachetune/pkg/shard"
)

// ringShard is the Shard of one replica of a static ring, by object, as
// leanstore's WithShard filters: enough for the decoder's tests.
type ringShard struct {
	v                     *shard.Version
	skippedListed, events atomic.Int64
}

var _ Shard = (*ringShard)(nil)

// staticShard is shard index of total's filter, with its ring applied.
func staticShard(t *testing.T, index, total int) *ringShard {
	t.Helper()
	m, err := shard.Static(index, total)
	if err != nil {
		t.Fatal(err)
	}
	v, err := m.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return &ringShard{v: v}
}

func (s *ringShard) Owns(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil {
		return true
	}
	return s.v.Owns(m.GetNamespace(), m.GetName(), shard.ByObject)
}

func (s *ringShard) OwnsBytes(ns, name []byte) bool {
	return s.v.OwnsHash(shard.KeyHashBytes(ns, name, shard.ByObject))
}

func (s *ringShard) Apply(context.Context) error { return nil }
func (s *ringShard) Took()                       {}
func (s *ringShard) Changed() <-chan struct{}    { return nil }
func (s *ringShard) Moved() (bool, []any)        { return false, nil }
func (s *ringShard) SkippedListed()              { s.skippedListed.Add(1) }
func (s *ringShard) SkippedEvent()               { s.events.Add(1) }

func shardedDecoder(f Shard) *wire.Decoder {
	return newWireDecoder(func() runtime.Object { return &corev1.Pod{} }, podsGR, nil, shrink.NewPipeline(shrink.Config{ManagedFields: true}), f)
}

// ownedAndNot returns the name of a Pod of namespace ns that f keeps and one it
// drops.
func ownedAndNot(t *testing.T, f Shard) (owned, other string) {
	t.Helper()
	for i := 0; owned == "" || other == ""; i++ {
		name := fmt.Sprintf("p-%d", i)
		if f.OwnsBytes([]byte("ns"), []byte(name)) {
			owned = name
		} else {
			other = name
		}
	}
	return owned, other
}

// podMessage is the protobuf message of a Pod (without the envelope).
func podMessage(t *testing.T, p *corev1.Pod) []byte {
	t.Helper()
	_, msg, err := wire.Unwrap(encodePod(t, p))
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// corruptBody keeps msg's metadata and replaces the rest of the Pod with a
// spec that no decoder can read: a nested field whose length runs past the end.
func corruptBody(t *testing.T, msg []byte) []byte {
	t.Helper()
	var out []byte
	err := wire.EachField(msg, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num == 1 { // ObjectMeta
			out = protowire.AppendTag(out, num, protowire.BytesType)
			out = protowire.AppendBytes(out, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out = protowire.AppendTag(out, 2, protowire.BytesType) // PodSpec
	return protowire.AppendBytes(out, []byte{0x0a, 0x7f, 'x'})
}

// The decoder drops another shard's object from its metadata alone: what
// follows is never read, as a body no decoder can read shows, and dropping
// costs no allocation.
func TestShardSkipsBeforeDecoding(t *testing.T) {
	f := staticShard(t, 0, 3)
	d := shardedDecoder(f)
	owned, other := ownedAndNot(t, f)

	got, _, err := d.Object(podMessage(t, testPod(owned, "7")))
	if err != nil || got == nil || got.(*corev1.Pod).Name != owned {
		t.Fatalf("own Pod %s: got %v, %v; want it decoded", owned, got, err)
	}
	if got, _, err := d.Object(podMessage(t, testPod(other, "7"))); err != nil || got != nil {
		t.Fatalf("another shard's Pod %s: got %v, %v; want nil, nil", other, got, err)
	}
	if string(d.SkippedRV()) != "7" {
		t.Errorf("skippedRV %q after dropping a Pod at 7", d.SkippedRV())
	}

	if _, _, err := d.Object(corruptBody(t, podMessage(t, testPod(owned, "7")))); err == nil {
		t.Fatal("own Pod with a corrupt spec decoded without an error: the corruption does not reach the decoder, so the test proves nothing")
	}
	if got, _, err := d.Object(corruptBody(t, podMessage(t, testPod(other, "7")))); err != nil || got != nil {
		t.Fatalf("another shard's Pod with a corrupt spec: got %v, %v; want it dropped before its spec is read", got, err)
	}

	msg := podMessage(t, testPod(other, "8"))
	if allocs := testing.AllocsPerRun(100, func() { _, _, _ = d.Object(msg) }); allocs != 0 {
		t.Errorf("dropping another shard's Pod allocates %.0f times, want 0", allocs)
	}
}

// A list page decoded by three shards' decoders splits into three disjoint
// parts whose union is the page, and each part is counted as kept or skipped.
func TestShardSplitsAListPage(t *testing.T) {
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "99"}}
	for i := range 600 {
		list.Items = append(list.Items, *testPod(fmt.Sprintf("p-%d", i), "7"))
	}
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(list, &buf); err != nil {
		t.Fatal(err)
	}
	held := map[string]int{}
	for i := range 3 {
		f := staticShard(t, i, 3)
		res, _, err := decodeList(&conn{shard: f}, shardedDecoder(f), bytes.NewReader(buf.Bytes()), NewPacer(0))
		if err != nil {
			t.Fatal(err)
		}
		if res.rv != "99" {
			t.Errorf("shard %d: list at %q, want 99", i, res.rv)
		}
		if kept, skipped := len(res.items), f.skippedListed.Load(); kept+int(skipped) != 600 {
			t.Errorf("shard %d kept %d and skipped %d of 600", i, kept, skipped)
		}
		for _, o := range res.items {
			held[o.(*corev1.Pod).Name]++
		}
	}
	for _, p := range list.Items {
		if held[p.Name] != 1 {
			t.Errorf("Pod %s held by %d of 3 shards, want 1", p.Name, held[p.Name])
		}
	}
}

// A watch event of another shard comes out of the lean watch decoder as a
// skipped event that carries its resourceVersion, for the bookmark that keeps
// the reflector current.
func TestShardSkipsWatchEvents(t *testing.T) {
	f := staticShard(t, 1, 3)
	owned, other := ownedAndNot(t, f)
	cases := []struct {
		name     string
		typ      watch.EventType
		wantType watch.EventType
	}{
		{owned, watch.Added, watch.Added},
		{owned, watch.Deleted, watch.Deleted},
		{other, watch.Added, eventSkipped},
		{other, watch.Modified, eventSkipped},
		{other, watch.Deleted, eventSkipped},
	}
	var stream []byte
	for _, tc := range cases {
		frame, err := (&metav1.WatchEvent{Type: string(tc.typ), Object: runtime.RawExtension{Raw: encodePod(t, testPod(tc.name, "42"))}}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		stream = binary.BigEndian.AppendUint32(stream, uint32(len(frame)))
		stream = append(stream, frame...)
	}
	w := wire.NewWatch(io.NopCloser(bytes.NewReader(stream)), func() {}, shardedDecoder(f), skippedEvent, func(err error) {
		t.Errorf("the watch broke: %v", err)
	})
	defer w.Stop()
	for _, tc := range cases {
		ev, ok := <-w.ResultChan()
		if !ok {
			t.Fatalf("the watch ended before %s %s", tc.typ, tc.name)
		}
		if ev.Type != tc.wantType {
			t.Errorf("%s %s came out as %s, want %s", tc.typ, tc.name, ev.Type, tc.wantType)
		}
		if so, ok := ev.Object.(*skippedObject); ev.Type == eventSkipped && (!ok || so.rv != "42") {
			t.Errorf("skipped %s %s carries %#v, want resourceVersion 42", tc.typ, tc.name, ev.Object)
		}
	}
	if ev, ok := <-w.ResultChan(); ok {
		t.Errorf("an event past the stream: %v", ev)
	}
}
