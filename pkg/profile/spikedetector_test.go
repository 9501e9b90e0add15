package profile

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSpikeDetector(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	edges := []float64{0, 0.001, 0.010, 0.100}
	// sched returns a cumulative scheduler histogram.
	sched := func(counts ...uint64) Histogram { return Histogram{Counts: counts, Buckets: edges} }
	// snap is a snapshot at second sec with heap MiB of heap objects.
	snap := func(sec int, heapMiB uint64, h Histogram) RuntimeSnapshot {
		return RuntimeSnapshot{At: t0.Add(time.Duration(sec) * time.Second), HeapObjectsBytes: heapMiB << 20, SchedLatency: h}
	}
	const mib = 1 << 20

	tests := []struct {
		name  string
		cfg   SpikeConfig
		snaps []RuntimeSnapshot
		// want holds the trigger of each snapshot, "" for none.
		want []trigger
	}{
		{
			name:  "heap threshold fires at and above it",
			cfg:   SpikeConfig{HeapBytes: 150 * mib},
			snaps: []RuntimeSnapshot{snap(0, 100, sched()), snap(1, 149, sched()), snap(2, 150, sched()), snap(3, 400, sched())},
			want: []trigger{{}, {},
				{name: TriggerHeapBytes, metric: metricHeapObjects, unit: "bytes", value: 150 * mib, threshold: 150 * mib},
				{name: TriggerHeapBytes, metric: metricHeapObjects, unit: "bytes", value: 400 * mib, threshold: 150 * mib}},
		},
		{
			name:  "growth below the ratio does not fire",
			cfg:   SpikeConfig{HeapGrowthRatio: 2, BaselineWindow: 2 * time.Second},
			snaps: []RuntimeSnapshot{snap(0, 100, sched()), snap(1, 100, sched()), snap(2, 100, sched()), snap(3, 199, sched())},
			want:  []trigger{{}, {}, {}, {}},
		},
		{
			name:  "growth ratio fires once armed",
			cfg:   SpikeConfig{HeapGrowthRatio: 2, BaselineWindow: 2 * time.Second},
			snaps: []RuntimeSnapshot{snap(0, 100, sched()), snap(1, 100, sched()), snap(2, 100, sched()), snap(3, 300, sched())},
			want: []trigger{{}, {}, {},
				{name: TriggerHeapGrowth, metric: metricHeapObjects, unit: "bytes", value: 300 * mib, threshold: 200 * mib, baseline: 100 * mib}},
		},
		{
			name: "growth ratio is not armed during the first window",
			cfg:  SpikeConfig{HeapGrowthRatio: 2, BaselineWindow: 10 * time.Second},
			// The first sync of a process: from 5 MiB to 300 MiB.
			snaps: []RuntimeSnapshot{snap(0, 5, sched()), snap(1, 100, sched()), snap(2, 300, sched())},
			want:  []trigger{{}, {}, {}},
		},
		{
			name: "scheduler p99 over one interval",
			cfg:  SpikeConfig{SchedP99: 5 * time.Millisecond},
			snaps: []RuntimeSnapshot{
				snap(0, 1, sched(1000, 0, 0)),
				snap(1, 1, sched(1100, 0, 0)),  // 100 fast wake-ups
				snap(2, 1, sched(1100, 0, 50)), // 50 slow ones, 10-100 ms
			},
			want: []trigger{{}, {},
				{name: TriggerSchedP99, metric: metricSchedLatency, unit: "seconds", value: 0.0991, threshold: 0.005}},
		},
		{
			name: "scheduler p99 ignores windows with few samples",
			cfg:  SpikeConfig{SchedP99: 5 * time.Millisecond},
			snaps: []RuntimeSnapshot{
				snap(0, 1, sched(1000, 0, 0)),
				snap(1, 1, sched(1000, 0, 19)), // 19 slow wake-ups: under minSchedSamples
			},
			want: []trigger{{}, {}},
		},
		{
			name: "heap threshold is checked before the scheduler",
			cfg:  SpikeConfig{HeapBytes: 10 * mib, SchedP99: time.Millisecond},
			snaps: []RuntimeSnapshot{
				snap(0, 1, sched(0, 0, 0)),
				snap(1, 20, sched(0, 0, 100)),
			},
			want: []trigger{{}, {name: TriggerHeapBytes, metric: metricHeapObjects, unit: "bytes", value: 20 * mib, threshold: 10 * mib}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Dir = "unused"
			cfg, err := cfg.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			d := newSpikeDetector(cfg)
			var got []trigger
			for _, s := range tt.snaps {
				trig, _ := d.observe(s)
				got = append(got, trig)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(trigger{}), cmpopts.EquateApprox(0.01, 0)); diff != "" {
				t.Errorf("triggers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSpikeConfigValidation(t *testing.T) {
	tests := []struct {
		name    string
		cfg     SpikeConfig
		wantErr bool
	}{
		{"minimal", SpikeConfig{Dir: "d", HeapBytes: 1}, false},
		{"no dir", SpikeConfig{HeapBytes: 1}, true},
		{"no trigger", SpikeConfig{Dir: "d"}, true},
		{"ratio of 1", SpikeConfig{Dir: "d", HeapGrowthRatio: 1}, true},
		{"negative interval", SpikeConfig{Dir: "d", HeapBytes: 1, Interval: -time.Second}, true},
		{"too few files for a capture", SpikeConfig{Dir: "d", HeapBytes: 1, MaxFiles: 2}, true},
		{"two files without trace", SpikeConfig{Dir: "d", HeapBytes: 1, MaxFiles: 2, DisableTrace: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.cfg.withDefaults()
			if (err != nil) != tt.wantErr {
				t.Errorf("withDefaults(%+v) error %v, want error %v", tt.cfg, err, tt.wantErr)
			}
		})
	}
}
