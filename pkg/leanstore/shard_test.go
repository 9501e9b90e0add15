package leanstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/cachetune/cachetune/internal/reflector"
	"github.com/cachetune/cachetune/internal/shrink"
	"github.com/cachetune/cachetune/internal/wire"
	"github.com/cachetune/cachetune/pkg/shard"
)

// manualMembership is the membership of self whose members are set by hand,
// ready with these.
func manualMembership(t *testing.T, self string, members ...string) *shard.Membership {
	t.Helper()
	m, err := shard.NewMembership(self)
	if err != nil {
		t.Fatal(err)
	}
	setMembers(t, m, members...)
	return m
}

func setMembers(t *testing.T, m *shard.Membership, members ...string) {
	t.Helper()
	if err := m.Set(members...); err != nil {
		t.Fatal(err)
	}
}

// staticFilter is shard index of total's filter, with its ring applied.
func staticFilter(t *testing.T, index, total int) *shardFilter {
	t.Helper()
	m, err := shard.Static(index, total)
	if err != nil {
		t.Fatal(err)
	}
	f := newShardFilter(&shardConfig{m: m, by: shard.ByObject})
	if err := f.apply(t.Context()); err != nil {
		t.Fatal(err)
	}
	return f
}

func shardedDecoder(f *shardFilter) *wire.Decoder {
	return newWireDecoder(func() runtime.Object { return &corev1.Pod{} }, podsGR, nil, shrink.NewPipeline(shrink.Config{ManagedFields: true}), f)
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

// ownedAndNot returns the name of a Pod of namespace ns that f keeps and one it
// drops.
func ownedAndNot(t *testing.T, f *shardFilter) (owned, other string) {
	t.Helper()
	for i := 0; owned == "" || other == ""; i++ {
		name := fmt.Sprintf("p-%d", i)
		if f.ownsBytes([]byte("ns"), []byte(name)) {
			owned = name
		} else {
			other = name
		}
	}
	return owned, other
}

// The decoder drops another shard's object from its metadata alone: what
// follows is never read, as a body no decoder can read shows, and dropping
// costs no allocation.
func TestShardSkipsBeforeDecoding(t *testing.T) {
	f := staticFilter(t, 0, 3)
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
		f := staticFilter(t, i, 3)
		res, _, err := decodeList(shardedDecoder(f), bytes.NewReader(buf.Bytes()), f, reflector.NewPacer(0))
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
	f := staticFilter(t, 1, 3)
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

// A replica outside the ring (its Lease not renewed in time) holds nothing.
func TestShardOutsideTheRingOwnsNothing(t *testing.T) {
	m := manualMembership(t, "c", "a", "b")
	f := newShardFilter(&shardConfig{m: m, by: shard.ByObject})
	if err := f.apply(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		ns, name := fmt.Sprintf("team-%d", i%50), fmt.Sprintf("web-%d", i)
		if f.ownsBytes([]byte(ns), []byte(name)) || f.owns(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}) {
			t.Fatalf("a replica outside the ring owns %s/%s", ns, name)
		}
	}
}

func TestShardConfigErrors(t *testing.T) {
	m, _ := shard.Static(0, 2)
	for _, c := range []shardConfig{{m: nil, by: shard.ByObject}, {m: m, by: "uid"}} {
		f := newShardFilter(&c)
		if err := f.apply(t.Context()); err == nil {
			t.Errorf("WithShard(%v, %q) applied without an error", c.m, c.by)
		}
		if st := f.status(); st.Error == "" {
			t.Errorf("WithShard(%v, %q): Status has no error", c.m, c.by)
		}
	}
}

// A ring change makes the informer rebalancing until a list with the new ring
// has been handed to the reflector; a change that moves nothing to or from
// this replica needs no list.
func TestShardRebalancingUntilTaken(t *testing.T) {
	m := manualMembership(t, "a", "a", "b")
	f := newShardFilter(&shardConfig{m: m, by: shard.ByObject})
	if err := f.apply(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.took()
	if st := f.status(); st.Rebalancing || st.Generation != 1 || len(st.Members) != 2 {
		t.Fatalf("after the first list: %+v", st)
	}
	changed := f.changed()
	setMembers(t, m, "a", "b", "c")
	select {
	case <-changed:
	default:
		t.Fatal("a new ring did not close the applied ring's changed channel")
	}
	if !f.moved(m.Current()) {
		t.Fatal("c joining moved nothing to or from a")
	}
	if st := f.status(); !st.Rebalancing || st.RebalancingSince.IsZero() {
		t.Fatalf("after the ring changed: %+v, want rebalancing", st)
	}
	if err := f.apply(t.Context()); err != nil { // the re-list inside the watch
		t.Fatal(err)
	}
	f.took()
	if st := f.status(); st.Rebalancing || st.Rebalances != 1 || len(st.Members) != 3 {
		t.Fatalf("after the re-list: %+v, want 1 rebalance and 3 members", st)
	}
	setMembers(t, m, "a", "b", "c") // the same members: no new ring
	if f.moved(m.Current()) {
		t.Error("a ring with the same members moved something")
	}
}

// A ring that moves nothing is taken without a list, but only the ring that
// was compared: one published in between, which moves slots, is left for the
// watch's next rebalance, not taken with objects the informer does not hold.
func TestShardAdvanceTakesOnlyTheComparedRing(t *testing.T) {
	m := manualMembership(t, "z", "a", "b") // z outside the ring: owns nothing
	f := newShardFilter(&shardConfig{m: m, by: shard.ByObject})
	if err := f.apply(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.took()
	setMembers(t, m, "a", "b", "c") // z still outside: nothing moves
	compared := m.Current()
	if f.moved(compared) {
		t.Fatal("c joining moved something to z, which is outside the ring")
	}
	setMembers(t, m, "a", "b", "c", "z") // published before the advance: z takes slots
	f.advance(compared)
	if st := f.status(); !st.Rebalancing || len(st.Members) != 3 {
		t.Fatalf("after advancing to [a b c] with [a b c z] published: %+v, want 3 members and rebalancing", st)
	}
	select {
	case <-f.changed():
	default:
		t.Fatal("the advanced ring's changed channel is open: the watch would never take z's slots")
	}
	if !f.moved(m.Current()) {
		t.Error("z joining moved nothing to z")
	}
}

// A re-list's DELETED of an object that went to another shard carries the
// object as it was handed, with its own resourceVersion: it was not deleted,
// and if it comes back unchanged its ADDED must not be older than the DELETED
// the handlers were told. An object of this shard that the list lacks was
// deleted, and its DELETED carries the list's resourceVersion.
func TestShardRebalanceDeletesMovedAtTheirOwnVersion(t *testing.T) {
	f := staticFilter(t, 0, 2)
	owned, other := ownedAndNot(t, f)
	v := reflector.NewHanded()
	v.MovedOut = func(obj runtime.Object) bool { return !f.owns(obj) }
	pod := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	v.Replace([]runtime.Object{pod(owned, "5"), pod(other, "6")})
	got := map[string]string{}
	for _, ev := range v.Diff(nil, "10").Deleted {
		if ev.Type != watch.Deleted {
			t.Errorf("event %s, want DELETED", ev.Type)
		}
		p := ev.Object.(*corev1.Pod)
		got[p.Name] = p.ResourceVersion
	}
	if want := map[string]string{owned: "10", other: "6"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("DELETED resourceVersions %v, want %v (the deleted one at the list's, the moved one at its own)", got, want)
	}
}
