package reflector

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	rtmetrics "runtime/metrics"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/cachetune/cachetune/internal/shrink"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// BenchmarkPacedList runs the pacer as a list of 10,000 Pods does: each Pod of
// the standard dataset decoded from its protobuf bytes, stripped (managedFields
// and last-applied) or stripped and shared, kept, a tick after each, finish at
// the end. The bytes are made one Pod at a time into a reused buffer, so that
// the process holds little but the list, as when the list streams from a server:
// the most collections the bound forces. It reports the collections forced in
// one list and the heap's peak over the list's own live heap (both over what the
// process held before the list), with the per-list maximum and without it, and
// with the bound measured against the projected live heap (the default) and
// against the last collection's.
func BenchmarkPacedList(b *testing.B) {
	if off := NewPacer(1.25).off; off != "" {
		b.Skipf("the heap bound is off in this process: %s", off)
	}
	const n = 10000
	for _, mode := range []struct {
		name  string
		strip shrink.Config
	}{
		{"strip-mf-la", shrink.Config{ManagedFields: true, Annotations: map[string]bool{lastApplied: true}}},
		{"share", shrink.Config{ManagedFields: true, Annotations: map[string]bool{lastApplied: true}, Share: true}},
	} {
		for _, v := range []struct{ capped, projected bool }{{true, true}, {true, false}, {false, true}} {
			capped, projected := v.capped, v.projected
			b.Run(fmt.Sprintf("%s/capped=%v/projected=%v/pods=%d", mode.name, capped, projected, n), func(b *testing.B) {
				if !capped {
					defer func(m int) { maxForcedPerList = m }(maxForcedPerList)
					maxForcedPerList = 1 << 30
				}
				defer func(p bool) { projectLive = p }(projectLive)
				projectLive = projected
				var forced, peakRatio float64
				ops := 0
				for b.Loop() {
					f, r := pacedList(b, n, shrink.NewPipeline(mode.strip))
					forced += float64(f)
					peakRatio += r
					ops++
				}
				b.ReportMetric(forced/float64(ops), "forced-gcs/list")
				b.ReportMetric(peakRatio/float64(ops), "peak/live")
			})
		}
	}
}

// pacedList lists n Pods through a pacer and returns the collections it forced
// and the heap's peak over the list's live heap.
func pacedList(b *testing.B, n int, s *shrink.Pipeline) (int, float64) {
	ser := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	spec := dataset.Spec{Name: "standard", Namespace: "bench"}
	now := time.Date(2026, 11, 29, 12, 24, 22, 0, time.UTC)
	templates := make([]*corev1.Pod, 8)
	for j := range templates {
		templates[j] = dataset.NewPod(spec, j, now)
		templates[j].APIVersion, templates[j].Kind = "v1", "Pod"
	}
	var buf bytes.Buffer
	encode := func(i int) []byte {
		p := templates[i%len(templates)]
		p.Name = fmt.Sprintf("%s-%05d", p.GenerateName, i)
		p.UID = types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		p.ResourceVersion = fmt.Sprint(1000 + i)
		p.Status.PodIP = fmt.Sprintf("10.%d.%d.%d", 100+i/65536%100, i/256%256, i%256)
		p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
		started := metav1.NewTime(now.Add(-time.Duration(i%3600) * time.Second))
		p.Status.StartTime = &started
		for k := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[k].ContainerID = fmt.Sprintf("containerd://%016x%016x", rand.Uint64(), rand.Uint64())
		}
		buf.Reset()
		if err := ser.Encode(p, &buf); err != nil {
			b.Fatal(err)
		}
		return buf.Bytes()
	}

	runtime.GC()
	base := heapLive()
	heap := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	p := NewPacer(1.25)
	kept := make([]any, 0, n)
	peak := uint64(0)
	for i := range n {
		pod := &corev1.Pod{}
		if _, _, err := ser.Decode(encode(i), nil, pod); err != nil {
			b.Fatal(err)
		}
		out, err := s.Apply(pod, podsGR)
		if err != nil {
			b.Fatal(err)
		}
		kept = append(kept, out)
		p.Tick()
		if i%checkEvery == checkEvery-1 { // before the heap check of the next tick
			rtmetrics.Read(heap)
			peak = max(peak, heap[0].Value.Uint64())
		}
	}
	p.Finish()
	runtime.GC()
	live := heapLive()
	runtime.KeepAlive(kept)
	return p.forced, float64(peak-base) / float64(live-base)
}

func heapLive() uint64 {
	s := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

// lastApplied is leanstore's LastAppliedAnnotation.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

var podsGR = schema.GroupResource{Resource: "pods"}
