package bench

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func ramp(n int, heap func(i int) uint64) []MemSample {
	out := make([]MemSample, n)
	for i := range out {
		out[i] = MemSample{T: time.Duration(i) * time.Millisecond, Heap: heap(i), RSS: uint64(i)}
	}
	return out
}

func TestDownsample(t *testing.T) {
	flat := func(int) uint64 { return 10 }
	for _, tc := range []struct {
		name string
		in   []MemSample
		n    int
		want []MemSample
	}{
		{"short series unchanged", ramp(3, flat), 5, ramp(3, flat)},
		{"n too small keeps all", ramp(4, flat), 2, ramp(4, flat)},
		{
			name: "spike survives",
			in: ramp(10, func(i int) uint64 {
				if i == 3 {
					return 99
				}
				return 10
			}),
			n: 4, // first, two buckets of inner samples 1..8, last
			want: []MemSample{
				{T: 0, Heap: 10, RSS: 0},
				{T: 3 * time.Millisecond, Heap: 99, RSS: 4}, // bucket 1..4: max heap at 3, max RSS 4
				{T: 5 * time.Millisecond, Heap: 10, RSS: 8}, // bucket 5..8: first of equals, max RSS 8
				{T: 9 * time.Millisecond, Heap: 10, RSS: 9},
			},
		},
	} {
		got := Downsample(tc.in, tc.n)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: Downsample (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestDownsampleBoundsAndOrder(t *testing.T) {
	in := ramp(100000, func(i int) uint64 { return uint64(i % 977) })
	got := Downsample(in, 300)
	if len(got) > 300 {
		t.Fatalf("len = %d, want at most 300", len(got))
	}
	if got[0] != in[0] || got[len(got)-1] != in[len(in)-1] {
		t.Errorf("first and last samples not kept: %v ... %v", got[0], got[len(got)-1])
	}
	var maxIn, maxOut uint64
	for _, s := range in {
		maxIn = max(maxIn, s.Heap)
	}
	for i, s := range got {
		maxOut = max(maxOut, s.Heap)
		if i > 0 && s.T <= got[i-1].T {
			t.Fatalf("points out of order at %d", i)
		}
	}
	if maxOut != maxIn {
		t.Errorf("peak %d lost, downsampled peak %d", maxIn, maxOut)
	}
}
