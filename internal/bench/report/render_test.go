package report

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixtureReport is a small, fixed report: a baseline, a stripped mode and the
// same in leanstore (a pair for the side-by-side chart), a metadata-only LIST
// mode and a failed mode; two re-lists, the second after a tenth changed.
func fixtureReport() bench.Report {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	series := func(peak uint64) bench.Series {
		s := bench.Series{}
		for i := range 12 {
			h := uint64(40 << 20)
			switch {
			case i < 2:
				h = uint64(i) * 20 << 20
			case i == 5 || i == 9:
				h = peak
			}
			s.Seconds = append(s.Seconds, float64(i)*0.5)
			s.Heap = append(s.Heap, h)
			s.RSS = append(s.RSS, h+30<<20)
		}
		return s
	}
	markers := []bench.Marker{{Seconds: 0, Label: "start"}, {Seconds: 0.9, Label: "synced"}, {Seconds: 2.4, Label: "410 #1"}, {Seconds: 2.6, Label: "re-list #1 done"}, {Seconds: 4.3, Label: "410 #2"}, {Seconds: 4.4, Label: "list #2"}, {Seconds: 4.6, Label: "re-list #2 done"}}
	server := func(cpu float64, objects float64) *bench.ServerCost {
		return &bench.ServerCost{CPUSeconds: cpu, PeakRSS: 900 << 20, StartRSS: 850 << 20,
			Storage: &bench.StorageCounts{CacheLists: 1, CacheObjects: objects}}
	}
	changes := dataset.Changes{Updated: 100, Created: 10, Deleted: 10}
	result := func(mode, title string, streaming, diffOnly bool, live uint64, perObj, initRatio, relistRatio float64, srv bench.Requests) bench.Result {
		rl := func(i int) bench.Relist {
			r := bench.Relist{Index: i, WatchesEnded: 1, Seconds: 0.21, Updates: 1000, Delivered: bench.Events{Updates: 1000}, LiveHeapAfter: live,
				BytesReceived: 15_700_000, Window: bench.Window{StartSeconds: 2.4, EndSeconds: 3.6, PeakHeap: uint64(float64(live) * relistRatio),
					PeakRatio: relistRatio, CPUSeconds: 0.3, Server: server(0.25, 1000), Sampling: bench.Sampling{Samples: 480, LongestGapMs: 2.5 + 10*(relistRatio-1)}, Probe: bench.LatencyStats{Count: 1000, P50: 0.08, P99: 4.2, Max: 38.5},
					Runtime: bench.RuntimeStats{Seconds: 1.2, Sched: bench.LatencyStats{Count: 5000, P50: 0.01, P99: 1.25, Max: 9.4}, GCCPUSeconds: 0.3, AvailableCPUSeconds: 2.4}}}
			if i == 2 {
				r.Churn, r.Changes = 0.1, changes
				r.Window.StartSeconds, r.Window.EndSeconds = 4.4, 5.4
				r.Delivered = bench.Events{Updates: 990, Adds: 10, Deletes: 10}
			}
			if diffOnly {
				r.Delivered = bench.Events{}
				if i == 2 {
					r.Delivered = bench.Events{Updates: 100, Adds: 10, Deletes: 10}
				}
				r.Updates = r.Delivered.Updates + r.Delivered.Adds
			}
			return r
		}
		return bench.Result{
			Mode: mode, Title: title, Resource: "pods", Streaming: streaming, Started: start.Add(10 * time.Second),
			Objects: 1000, SyncSeconds: 0.93, BaselineHeap: 3 << 20, LiveHeap: live, LiveRSS: live + 30<<20, BytesPerObject: perObj,
			InitialSync: bench.Window{EndSeconds: 1.4, PeakHeap: uint64(float64(live) * initRatio), PeakRatio: initRatio, CPUSeconds: 0.35,
				Server:  server(0.31, 0),
				Probe:   bench.LatencyStats{Count: 900, P50: 0.07, P99: 3.1, Max: 12},
				Runtime: bench.RuntimeStats{Seconds: 1.4, GCCPUSeconds: 0.2, AvailableCPUSeconds: 2.8}},
			Idle: bench.Window{StartSeconds: 1.5, EndSeconds: 2.4, Probe: bench.LatencyStats{Count: 850, P50: 0.06, P99: 0.2, Max: 0.9},
				Runtime: bench.RuntimeStats{Seconds: 0.9, Sched: bench.LatencyStats{Count: 40, P50: 0.004, P99: 0.05, Max: 0.1}}},
			Relists:       []bench.Relist{rl(1), rl(2)},
			BytesReceived: 47_300_000, SyncBytes: 15_700_000,
			ListPath: bench.ListPath{Server: srv, Client: srv, Library: "unknown"},
			Series:   series(uint64(float64(live) * relistRatio)), Markers: markers,
		}
	}
	failed := bench.Result{Mode: "client-go/typed-json/list", Title: "client-go typed, JSON, LIST", Resource: "pods",
		Error: "sync pods of client-go/typed-json/list: timed out after 10m0s", ListPath: bench.ListPath{Server: bench.Requests{List: 1}}}
	// A reconcile list through a lister (no copies) and through a
	// deep-copying reader; the metadata-only mode has no reader.
	list := func(perObj uint64, ratio float64) *bench.ReconcileList {
		return &bench.ReconcileList{Objects: 1000, Seconds: 0.04, AllocatedBytes: perObj * 1000, HeldHeap: uint64(ratio * float64(35<<20)),
			Window: bench.Window{StartSeconds: 2.4, EndSeconds: 2.44, PeakHeap: uint64(ratio * float64(35<<20)), PeakRatio: ratio}}
	}
	typed := result("client-go/typed/stream", "client-go typed, protobuf, streaming", true, false, 35<<20, 33_200, 1.31, 2.87, bench.Requests{WatchList: 3})
	typed.ReconcileList = list(16, 1.0)
	copying := result("client-go/typed-strip-mf-la/stream", "client-go typed, strip managedFields and last-applied, streaming", true, false, 21<<20, 20_700, 1.66, 3.1, bench.Requests{WatchList: 3})
	copying.ReconcileList = list(18_100, 1.86)
	lean := result("leanstore/typed-strip-mf-la/stream", "leanstore typed, strip managedFields and last-applied, streaming", true, true, 21<<20, 20_700, 1.02, 1.2, bench.Requests{WatchList: 3})
	lean.ReconcileList = &bench.ReconcileList{Objects: 1000, Error: "list pods through the manager's client: timed out"}
	// The events phase: three rates, the last beyond what the server took;
	// leanstore's last step lost two writes.
	events := func(cpu []float64, p99 []float64, lost int) *bench.EventsPhase {
		ev := &bench.EventsPhase{Objects: 100, IdleCPUPerSecond: 0.012, LiveHeapBefore: 36 << 20, LiveHeapAfter: 37 << 20,
			Idle: bench.Window{StartSeconds: 6, EndSeconds: 11}}
		for i, rate := range []float64{100, 1000, 5000} {
			achieved := []float64{99.8, 997, 1730}[i]
			n := int(achieved * 30)
			st := bench.EventStep{Index: i + 1, Rate: rate, AchievedRate: achieved, WriterSeconds: 30.1,
				Writes:    bench.EventWrites{Status: n * 6 / 10, Labels: n * 2 / 10, Created: n / 10, Deleted: n / 10},
				Delivered: bench.Events{Updates: n * 8 / 10, Adds: n / 10, Deletes: n / 10}, Matched: n,
				Latency:     bench.LatencyStats{Count: n, P50: p99[i] / 4, P99: p99[i], Max: p99[i] * 3},
				CPUPerEvent: cpu[i], LiveHeapBefore: 36 << 20, LiveHeapAfter: 36<<20 + uint64(i)<<19,
				Window: bench.Window{StartSeconds: 11 + 31*float64(i), EndSeconds: 41.5 + 31*float64(i), PeakHeap: 40 << 20, PeakRatio: 1.11,
					Server:  &bench.ServerCost{CPUSeconds: 9.5 * float64(i+1)},
					Runtime: bench.RuntimeStats{GCCPUSeconds: 0.2 * float64(i+1), AvailableCPUSeconds: 61}}}
			if i == 2 && lost > 0 {
				st.Lost, st.Matched, st.Latency.Count = lost, n-lost, n-lost
				st.Error = fmt.Sprintf("%d of %d writes never reached the handler within 30s", lost, n)
			}
			if i == 2 {
				st.Late = 12
			}
			ev.Steps = append(ev.Steps, st)
		}
		return ev
	}
	typed.Events = events([]float64{95, 71, 66}, []float64{4.1, 9.8, 850}, 0)
	lean.Events = events([]float64{120, 88, 80}, []float64{3.9, 8.7, 790}, 2)
	plan := bench.DefaultPlan()
	plan.Events = bench.DefaultEvents(100, 1000, 5000)
	return bench.Report{
		Schema: bench.ReportSchema, Started: start, Finished: start.Add(95 * time.Second),
		Environment: bench.Environment{Target: "local kube-apiserver", ServerVersion: "v1.37.2", GoVersion: "go1.26.8", ClientGo: "v0.37.2",
			OS: "linux", Arch: "amd64", CPUs: 2},
		Plan: plan,
		Datasets: []bench.Dataset{{Resource: "pods", Namespace: "cachebench", Count: 1000, Name: "standard", PodShape: "workload",
			JSONBytes: 22_900, ProtobufBytes: 15_700, ManagedFieldsBytes: 6_600, LastAppliedBytes: 4_700, Seeded: true, SeedSeconds: 9.5}},
		Results: []bench.Result{
			typed, copying, lean,
			result("client-go/metadata/list", "client-go metadata-only, LIST", false, false, 16<<20, 13_700, 1.9, 3.9, bench.Requests{List: 3, Watch: 3}),
			failed,
		},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/bench/report -run Golden -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; rerun with -update if the change is intended):\n%s", path, diff)
	}
}

func TestGoldenTable(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTable(&b, fixtureReport()); err != nil {
		t.Fatal(err)
	}
	golden(t, "table.golden", b.Bytes())
}

func TestGoldenHTML(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, fixtureReport()); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	// Self-contained: nothing is fetched and nothing runs.
	for _, bad := range []string{"<script", "http://", "https://", "<link", "@import"} {
		if strings.Contains(strings.ReplaceAll(html, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("the HTML report contains %q", bad)
		}
	}
	// Six bar charts, the side-by-side chart of the one pair, three of the
	// events phase, a heap chart per successful mode.
	if n := strings.Count(html, "<svg"); n != 6+1+3+4 {
		t.Errorf("the HTML report has %d charts, want 14", n)
	}
	for _, want := range []string{"client-go and leanstore, side by side", "re-list 2, 10% changed", "Re-lists",
		"Events in steady state", "Delivery latency against write rate", "CPU per event against write rate", "2 of 51900 writes never reached the handler"} {
		if !strings.Contains(html, want) {
			t.Errorf("the HTML report does not contain %q", want)
		}
	}
	golden(t, "report.golden.html", b.Bytes())
}

func TestJSONRoundTrip(t *testing.T) {
	want := fixtureReport()
	var b bytes.Buffer
	if err := bench.WriteJSON(&b, want); err != nil {
		t.Fatal(err)
	}
	got, err := bench.ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
}

// TestReadJSONSchema1 reads a report of the first schema, as committed
// reference results before churn and CPU were measured are: it reads, and its
// table renders with the figures it has.
func TestReadJSONSchema1(t *testing.T) {
	old := `{"schema": 1, "plan": {"relists": 1, "settle": "500ms", "idle": "1.5s", "sampleEvery": "5ms", "probeEvery": "1ms",
		"syncTimeout": "10m0s", "relistTimeout": "5m0s", "seriesPoints": 300},
		"results": [{"mode": "client-go/typed/stream", "title": "t", "resource": "pods", "objects": 10, "liveHeapBytes": 1000,
		"relists": [{"index": 1, "watchesEnded": 1, "seconds": 0.5, "updates": 10, "window": {"peakRatio": 2.5}}]}]}`
	r, err := bench.ReadJSON(strings.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "10 adds+upd") || !strings.Contains(b.String(), "2.50") {
		t.Errorf("the table of a schema 1 report lacks its re-list:\n%s", b.String())
	}
}

func TestSummaryStatesRatiosAndBytes(t *testing.T) {
	got := Summary(fixtureReport())
	want := []string{
		"Dataset: 1000 pods in namespace cachebench (workload-shaped), 22.9 KB of JSON each (managedFields 6.6 KB, last-applied 4.7 KB), 15.7 KB as protobuf.",
		"client-go typed, protobuf, streaming (client-go/typed/stream), pods: 33.2 KB per object; sync 0.93 s, 0.35 s CPU (350 µs per object), the server 0.31 s CPU, initial-sync peak 1.31x; re-list peak 2.87x / 2.87x the live heap (churn 0 / 0.1); worst 1 ms-probe lateness 38 ms in a re-list (0.9 ms idle); re-lists delivered all 120 changes and 890 updates of unchanged objects.",
		"client-go typed, strip managedFields and last-applied, streaming: 20.7 KB per object (62% of client-go/typed/stream); sync 0.93 s, 0.35 s CPU (1.0x), initial peak 1.66x; re-list peak 3.10x / 3.10x (churn 0 / 0.1); probe 38 ms; re-lists delivered all 120 changes and 890 updates of unchanged objects.",
		"leanstore typed, strip managedFields and last-applied, streaming: 20.7 KB per object (62% of client-go/typed/stream); sync 0.93 s, 0.35 s CPU (1.0x), initial peak 1.02x; re-list peak 1.20x / 1.20x (churn 0 / 0.1); probe 38 ms; re-lists delivered all 120 changes and 0 updates of unchanged objects.",
		"client-go metadata-only, LIST: 13.7 KB per object (41% of client-go/typed/stream); sync 0.93 s, 0.35 s CPU (1.0x), initial peak 1.90x; re-list peak 3.90x / 3.90x (churn 0 / 0.1); probe 38 ms; re-lists delivered all 120 changes and 890 updates of unchanged objects.",
		"client-go typed, JSON, LIST: failed (sync pods of client-go/typed-json/list: timed out after 10m0s).",
		"A reconcile reading every object once through the mode's reader allocated: client-go/typed/stream 0.0 KB per object (peak 1.00x), client-go/typed-strip-mf-la/stream 18.1 KB per object (peak 1.86x).",
		"Heap sampled every 2ms; the longest gap between two samples in a sync or a re-list was 32 ms (client-go/metadata/list re-list 1): a peak shorter than that may be missed.",
		"client-go/typed/stream, events on 100 Pods of the writer: 100/s asked, 99.8/s written: p50 1.02 ms, p99 4.10 ms, max 12 ms, 95 µs CPU per event; 1000/s asked, 997/s written: p50 2.45 ms, p99 9.80 ms, max 29 ms, 71 µs CPU per event; 5000/s asked, 1730/s written: p50 212 ms, p99 850 ms, max 2550 ms, 66 µs CPU per event; live heap +1.0 MiB over the phase.",
		"leanstore/typed-strip-mf-la/stream, events on 100 Pods of the writer: 100/s asked, 99.8/s written: p50 0.97 ms, p99 3.90 ms, max 12 ms, 120 µs CPU per event; 1000/s asked, 997/s written: p50 2.17 ms, p99 8.70 ms, max 26 ms, 88 µs CPU per event; 5000/s asked, 1730/s written: p50 198 ms, p99 790 ms, max 2370 ms, 80 µs CPU per event, 2 LOST; live heap +1.0 MiB over the phase.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Summary (-want +got):\n%s", diff)
	}
}

// TestLayoutLabelsDoNotOverlap places labels of markers close together, as a
// re-list's 410 and the end of the one before are: no two in a row overlap,
// and all stay inside the chart.
func TestLayoutLabelsDoNotOverlap(t *testing.T) {
	xs := []float64{2, 40, 41, 300, 305, 306, 700}
	texts := []string{"start", "synced", "410 #1", "re-list #1 done", "410 #2", "list #2", "re-list #2 done"}
	placed, rows := layoutLabels(xs, texts, 0, 720)
	if rows < 2 {
		t.Errorf("%d rows for labels that cannot share one", rows)
	}
	for i := range placed {
		wi := float64(len(texts[i])) * charW
		if placed[i].x-wi/2 < 0 || placed[i].x+wi/2 > 720 {
			t.Errorf("%q at %.0f leaves the chart", texts[i], placed[i].x)
		}
		for j := range i {
			wj := float64(len(texts[j])) * charW
			if placed[i].row == placed[j].row && placed[i].x-wi/2 < placed[j].x+wj/2 && placed[j].x-wj/2 < placed[i].x+wi/2 {
				t.Errorf("%q and %q overlap in row %d", texts[i], texts[j], placed[i].row)
			}
		}
	}
}

func TestComparableLinesPairLibraries(t *testing.T) {
	var got []string
	for _, l := range comparableLines(fixtureReport()) {
		got = append(got, l.Label+" "+l.Color)
	}
	want := []string{"client-go/typed-strip-mf-la/stream #D55E00", "leanstore/typed-strip-mf-la/stream #0072B2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("comparable lines (-want +got):\n%s", diff)
	}
}

// TestScaleReportDrawsCurves renders a report with the same modes at two
// sizes: the HTML gets a chart per figure against size, one line per mode.
func TestScaleReportDrawsCurves(t *testing.T) {
	r := fixtureReport()
	var grown []bench.Result
	for _, res := range r.Results[:3] {
		res.Objects, res.BytesPerObject = 10000, res.BytesPerObject*0.9
		grown = append(grown, res)
	}
	r.Results = append(r.Results[:3], grown...)
	big := r.Datasets[0]
	big.Count = 10000
	r.Datasets = append(r.Datasets, big)
	if !sized(r) {
		t.Fatal("a report with two dataset sizes is not sized")
	}
	lines := scaleLines(r, func(res bench.Result) float64 { return res.BytesPerObject })
	if len(lines) != 3 || len(lines[0].sizes) != 2 || lines[0].sizes[0] != 1000 || lines[0].values[1] != 33_200*0.9 {
		t.Fatalf("scale lines: %+v", lines)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if !strings.Contains(html, "Against dataset size") || !strings.Contains(html, "objects (log scale)") {
		t.Error("the HTML report of a scale run has no charts against size")
	}
	// The side-by-side chart takes the largest size of the pair.
	for _, l := range comparableLines(r) {
		if l.res.Objects != 10000 {
			t.Errorf("side-by-side line %s at %d objects, want the largest size", l.Label, l.res.Objects)
		}
	}
	// Summary sentences are per size.
	n := 0
	for _, line := range Summary(r) {
		if strings.Contains(line, "(client-go/typed/stream), ") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d baseline sentences, want one per size", n)
	}
}
