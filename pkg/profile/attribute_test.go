package profile_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/pprof/profile"

	cprofile "github.com/cachetune/cachetune/pkg/profile"
)

// heapSample is one synthetic heap profile sample: its stack from the
// allocation site outwards (a frame "a|b" is function a inlined into b) and
// its in-use objects and bytes.
type heapSample struct {
	stack          []string
	objects, bytes int64
}

// heapProfile builds a heap profile with Go's four sample types from samples,
// the way runtime/pprof lays one out (alloc values are set to the in-use ones).
func heapProfile(t *testing.T, samples ...heapSample) *profile.Profile {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
		},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:     512 * 1024,
	}
	funcs := map[string]*profile.Function{}
	fn := func(name string) *profile.Function {
		if f, ok := funcs[name]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(funcs) + 1), Name: name, SystemName: name}
		funcs[name] = f
		p.Function = append(p.Function, f)
		return f
	}
	locs := map[string]*profile.Location{}
	for _, s := range samples {
		var stack []*profile.Location
		for _, frame := range s.stack {
			loc, ok := locs[frame]
			if !ok {
				loc = &profile.Location{ID: uint64(len(locs) + 1), Address: uint64(0x1000 * (len(locs) + 1))}
				for _, name := range strings.Split(frame, "|") {
					loc.Line = append(loc.Line, profile.Line{Function: fn(name), Line: 1})
				}
				locs[frame] = loc
				p.Location = append(p.Location, loc)
			}
			stack = append(stack, loc)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: stack, Value: []int64{s.objects, s.bytes, s.objects, s.bytes}})
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("synthetic profile: %v", err)
	}
	return p
}

// Stacks as client-go v0.37 allocates them, allocation site first.
var (
	decodeStack = []string{
		"runtime.mallocgc",
		"k8s.io/api/core/v1.(*Container).Unmarshal",
		"k8s.io/api/core/v1.(*PodSpec).Unmarshal",
		"k8s.io/api/core/v1.(*Pod).Unmarshal",
		"k8s.io/apimachinery/pkg/runtime/serializer/protobuf.(*Serializer).Decode",
		"k8s.io/client-go/tools/cache.(*Reflector).list",
	}
	storeStack = []string{
		"runtime.mapassign_faststr",
		"k8s.io/client-go/tools/cache.(*threadSafeMap).Add",
		"k8s.io/client-go/tools/cache.(*cache).Add",
		"k8s.io/client-go/tools/cache.(*sharedIndexInformer).HandleDeltas",
	}
	// A transform runs inside DeltaFIFO: the innermost match decides.
	transformStack = []string{
		"runtime.makemap_small",
		"github.com/cachetune/cachetune/pkg/leanstore.stripManagedFields",
		"k8s.io/client-go/tools/cache.(*DeltaFIFO).queueActionLocked",
		"k8s.io/client-go/tools/cache.(*Reflector).watchHandler",
	}
	watchStack = []string{
		"runtime.makeslice",
		"k8s.io/apimachinery/pkg/api/meta.ExtractList",
		"k8s.io/client-go/tools/cache.(*Reflector).list",
	}
	// encoding/json inlined into a caller of another package.
	inlinedJSONStack = []string{
		"runtime.growslice",
		"encoding/json.(*decodeState).literalStore|main.loadConfig",
		"main.main",
	}
	otherStack = []string{"runtime.malg", "runtime.newproc1", "main.main"}
)

func TestAttribute(t *testing.T) {
	tests := []struct {
		name          string
		before, after []heapSample
		buckets       []cprofile.Bucket
		want          []cprofile.BucketBytes
	}{
		{
			name: "one profile on its own",
			after: []heapSample{
				{decodeStack, 10, 1000}, {storeStack, 2, 200}, {transformStack, 3, 30},
				{watchStack, 1, 64}, {inlinedJSONStack, 5, 500}, {otherStack, 7, 7},
			},
			want: []cprofile.BucketBytes{
				{Name: "decode", Objects: 15, Bytes: 1500},
				{Name: "store", Objects: 2, Bytes: 200},
				{Name: "transform", Objects: 3, Bytes: 30},
				{Name: "watch", Objects: 1, Bytes: 64},
				{Name: "other", Objects: 7, Bytes: 7},
			},
		},
		{
			name:   "growth between two profiles",
			before: []heapSample{{decodeStack, 10, 1000}, {storeStack, 2, 200}, {otherStack, 7, 7}},
			after:  []heapSample{{decodeStack, 30, 3000}, {storeStack, 3, 300}, {otherStack, 7, 7}, {watchStack, 1, 64}},
			want: []cprofile.BucketBytes{
				{Name: "decode", Objects: 20, Bytes: 2000},
				{Name: "store", Objects: 1, Bytes: 100},
				{Name: "transform"},
				{Name: "watch", Objects: 1, Bytes: 64},
				{Name: "other"},
			},
		},
		{
			name:   "memory freed goes negative",
			before: []heapSample{{decodeStack, 30, 3000}},
			after:  []heapSample{{decodeStack, 10, 1000}},
			want: []cprofile.BucketBytes{
				{Name: "decode", Objects: -20, Bytes: -2000},
				{Name: "store"}, {Name: "transform"}, {Name: "watch"}, {Name: "other"},
			},
		},
		{
			name: "bucket order decides between matches at the same frame",
			after: []heapSample{
				{[]string{"runtime.mallocgc", "example.com/x.TransformAndStore"}, 1, 10},
			},
			buckets: []cprofile.Bucket{
				{Name: "store", Match: regexp.MustCompile(`Store$`)},
				{Name: "transform", Match: regexp.MustCompile(`\.Transform`)},
			},
			want: []cprofile.BucketBytes{
				{Name: "store", Objects: 1, Bytes: 10},
				{Name: "transform"},
				{Name: "other"},
			},
		},
		{
			name:  "an explicit other bucket receives what nothing matches",
			after: []heapSample{{otherStack, 1, 10}, {decodeStack, 1, 5}},
			buckets: []cprofile.Bucket{
				{Name: "other"},
				{Name: "decode", Match: regexp.MustCompile(`Unmarshal$`)},
			},
			want: []cprofile.BucketBytes{
				{Name: "other", Objects: 1, Bytes: 10},
				{Name: "decode", Objects: 1, Bytes: 5},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before *profile.Profile
			if tt.before != nil {
				before = heapProfile(t, tt.before...)
			}
			after := heapProfile(t, tt.after...)
			buckets := tt.buckets
			if buckets == nil {
				buckets = cprofile.DefaultBuckets()
			}
			got := cprofile.Attribute(before, after, buckets)
			if diff := cmp.Diff(tt.want, got.Buckets); diff != "" {
				t.Errorf("buckets (-want +got):\n%s", diff)
			}
			var total cprofile.BucketBytes
			for _, b := range tt.want {
				total.Bytes += b.Bytes
				total.Objects += b.Objects
			}
			if got.Total.Bytes != total.Bytes || got.Total.Objects != total.Objects {
				t.Errorf("total %+v, want %d bytes in %d objects", got.Total, total.Bytes, total.Objects)
			}
			if got.Bytes(tt.want[0].Name) != tt.want[0].Bytes {
				t.Errorf("Bytes(%q) = %d, want %d", tt.want[0].Name, got.Bytes(tt.want[0].Name), tt.want[0].Bytes)
			}
		})
	}
}

func TestAttributeIgnoresNonHeapProfiles(t *testing.T) {
	cpu := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample:     []*profile.Sample{{Value: []int64{1, 10_000_000}}},
	}
	got := cprofile.Attribute(nil, cpu, cprofile.DefaultBuckets())
	if got.Total.Bytes != 0 || got.Total.Objects != 0 {
		t.Errorf("Attribute of a CPU profile: %+v, want nothing", got.Total)
	}
}

// TestDefaultBuckets pins which bucket real function names fall in.
func TestDefaultBuckets(t *testing.T) {
	tests := map[string]string{
		"k8s.io/api/core/v1.(*Pod).Unmarshal":                                        "decode",
		"k8s.io/apimachinery/pkg/apis/meta/v1.(*ObjectMeta).Unmarshal":               "decode",
		"k8s.io/apimachinery/pkg/runtime/serializer/json.(*Serializer).Decode":       "decode",
		"k8s.io/apimachinery/pkg/util/framer.(*lengthDelimitedFrameReader).Read":     "decode",
		"encoding/json.(*decodeState).object":                                        "decode",
		"sigs.k8s.io/json/internal/golang/encoding/json.(*decodeState).literalStore": "decode",
		"k8s.io/client-go/rest.(*Request).transformResponse":                         "decode",
		"k8s.io/client-go/rest/watch.(*Decoder).Decode":                              "decode",
		"google.golang.org/protobuf/proto.UnmarshalOptions.unmarshal":                "decode",
		"k8s.io/client-go/tools/cache.(*threadSafeMap).Add":                          "store",
		"k8s.io/client-go/tools/cache.(*storeIndex).updateSingleIndex":               "store",
		"k8s.io/client-go/tools/cache.(*DeltaFIFO).queueActionLocked":                "store",
		"k8s.io/client-go/tools/cache.(*RealFIFO).addToItems_locked":                 "store",
		"github.com/cachetune/cachetune/pkg/leanstore.(*Transformer).apply":          "transform",
		"github.com/cachetune/cachetune/internal/shrink.(*shareTable).internLocked":  "transform",
		"github.com/cachetune/cachetune/internal/reflector.(*Handed).Diff":           "transform",
		"sigs.k8s.io/controller-runtime/pkg/cache.TransformStripManagedFields.func1": "transform",
		"main.stripPod":            "transform",
		"example.com/op.Transform": "transform",
		"main.restripe":            "other",
		"k8s.io/client-go/tools/cache.(*Reflector).list":         "watch",
		"k8s.io/client-go/tools/cache.handleAnyWatch":            "watch",
		"k8s.io/client-go/tools/pager.(*ListPager).List":         "watch",
		"k8s.io/apimachinery/pkg/watch.(*StreamWatcher).receive": "watch",
		"k8s.io/apimachinery/pkg/api/meta.ExtractList":           "watch",
		"k8s.io/client-go/tools/cache.(*processorListener).run":  "other",
		"runtime.malg":                     "other",
		"strings.(*Builder).grow":          "other",
		"net/http.(*persistConn).readLoop": "other",
	}
	for fn, want := range tests {
		p := heapProfile(t, heapSample{stack: []string{fn}, objects: 1, bytes: 1})
		a := cprofile.Attribute(nil, p, cprofile.DefaultBuckets())
		got := ""
		for _, b := range a.Buckets {
			if b.Bytes == 1 {
				got = b.Name
			}
		}
		if got != want {
			t.Errorf("%s: bucket %q, want %q", fn, got, want)
		}
	}
}

func TestDelta(t *testing.T) {
	before := heapProfile(t, heapSample{decodeStack, 10, 1000}, heapSample{otherStack, 5, 50})
	after := heapProfile(t, heapSample{decodeStack, 25, 2500}, heapSample{otherStack, 5, 50}, heapSample{storeStack, 1, 8})
	before.TimeNanos, after.TimeNanos = 1e9, 4e9
	d, err := cprofile.Delta(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CheckValid(); err != nil {
		t.Fatalf("delta: %v", err)
	}
	got := map[string][]int64{}
	for _, s := range d.Sample {
		got[s.Location[1].Line[0].Function.Name] = s.Value
	}
	want := map[string][]int64{
		// Unchanged samples drop out.
		decodeStack[1]: {15, 1500, 15, 1500},
		storeStack[1]:  {1, 8, 1, 8},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delta samples by allocating function (-want +got):\n%s", diff)
	}
	if d.TimeNanos != 4e9 || d.DurationNanos != 3e9 {
		t.Errorf("delta spans %d+%d ns, want 4e9+3e9", d.TimeNanos, d.DurationNanos)
	}
	// The inputs are left alone.
	if before.Sample[0].Value[3] != 1000 || after.Sample[0].Value[3] != 2500 {
		t.Errorf("Delta modified its inputs")
	}
}
