package bench

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixtureReport is a small, fixed report: a baseline, a stripped mode, a
// metadata-only LIST mode and a failed mode.
func fixtureReport() Report {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	series := func(peak uint64) Series {
		s := Series{}
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
	markers := []Marker{{0, "start"}, {0.9, "synced"}, {2.4, "410 #1"}, {2.6, "re-list #1 done"}, {4.4, "410 #2"}, {4.6, "re-list #2 done"}}
	result := func(mode, title string, streaming bool, live uint64, perObj, initRatio, relistRatio float64, srv Requests) Result {
		rl := func(i int) Relist {
			return Relist{Index: i, WatchesEnded: 1, Seconds: 0.21, Updates: 1000, LiveHeapAfter: live,
				BytesReceived: 15_700_000, Window: Window{StartSeconds: 2.4, EndSeconds: 3.6, PeakHeap: uint64(float64(live) * relistRatio),
					PeakRatio: relistRatio, Probe: LatencyStats{Count: 1000, P50: 0.08, P99: 4.2, Max: 38.5},
					Runtime: RuntimeStats{Seconds: 1.2, Sched: LatencyStats{Count: 5000, P50: 0.01, P99: 1.25, Max: 9.4}, GCCPUSeconds: 0.3, AvailableCPUSeconds: 2.4}}}
		}
		return Result{
			Mode: mode, Title: title, Resource: "pods", Streaming: streaming,
			Objects: 1000, SyncSeconds: 0.93, BaselineHeap: 3 << 20, LiveHeap: live, LiveRSS: live + 30<<20, BytesPerObject: perObj,
			InitialSync: Window{EndSeconds: 1.4, PeakHeap: uint64(float64(live) * initRatio), PeakRatio: initRatio,
				Probe:   LatencyStats{Count: 900, P50: 0.07, P99: 3.1, Max: 12},
				Runtime: RuntimeStats{Seconds: 1.4, GCCPUSeconds: 0.2, AvailableCPUSeconds: 2.8}},
			Idle: Window{StartSeconds: 1.5, EndSeconds: 2.4, Probe: LatencyStats{Count: 850, P50: 0.06, P99: 0.2, Max: 0.9},
				Runtime: RuntimeStats{Seconds: 0.9, Sched: LatencyStats{Count: 40, P50: 0.004, P99: 0.05, Max: 0.1}}},
			Relists:       []Relist{rl(1), rl(2)},
			BytesReceived: 47_300_000, SyncBytes: 15_700_000,
			ListPath: ListPath{Server: srv, Client: srv, Library: "unknown"},
			Series:   series(uint64(float64(live) * relistRatio)), Markers: markers,
		}
	}
	failed := Result{Mode: "client-go/typed-json/list", Title: "client-go typed, JSON, LIST", Resource: "pods",
		Error: "sync pods of client-go/typed-json/list: timed out after 10m0s", ListPath: ListPath{Server: Requests{List: 1}}}
	return Report{
		Schema: ReportSchema, Started: start, Finished: start.Add(95 * time.Second),
		Environment: Environment{Target: "local kube-apiserver", ServerVersion: "v1.37.2", GoVersion: "go1.26.8", ClientGo: "v0.37.2",
			OS: "linux", Arch: "amd64", CPUs: 2},
		Plan: DefaultPlan(),
		Datasets: []Dataset{{Resource: "pods", Namespace: "cachebench", Count: 1000, JSONBytes: 22_900, ProtobufBytes: 15_700,
			ManagedFieldsBytes: 6_600, LastAppliedBytes: 4_700, Seeded: true}},
		Results: []Result{
			result("client-go/typed/stream", "client-go typed, protobuf, streaming", true, 35<<20, 33_200, 1.31, 2.87, Requests{WatchList: 3}),
			result("client-go/typed-strip-mf/stream", "client-go typed, strip managedFields, streaming", true, 28<<20, 25_800, 1.42, 3.1, Requests{WatchList: 3}),
			result("client-go/metadata/list", "client-go metadata-only, LIST", false, 16<<20, 13_700, 1.9, 3.9, Requests{List: 3, Watch: 3}),
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
		t.Fatalf("%v (run go test ./internal/bench -run Golden -update to create it)", err)
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
	if n := strings.Count(html, "<svg"); n != 4+3 { // four bar charts, a heap chart per successful mode
		t.Errorf("the HTML report has %d charts, want 7", n)
	}
	golden(t, "report.golden.html", b.Bytes())
}

func TestJSONRoundTrip(t *testing.T) {
	want := fixtureReport()
	var b bytes.Buffer
	if err := WriteJSON(&b, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
}

func TestReadJSONRejectsOtherSchemas(t *testing.T) {
	if _, err := ReadJSON(strings.NewReader(`{"schema": 99}`)); err == nil || !strings.Contains(err.Error(), "schema 99") {
		t.Errorf("ReadJSON of schema 99: %v, want a schema error", err)
	}
	if _, err := ReadJSON(strings.NewReader(`{"schema": 1, "bogus": true}`)); err == nil {
		t.Error("ReadJSON accepted an unknown field")
	}
}

func TestSummaryStatesRatiosAndBytes(t *testing.T) {
	got := Summary(fixtureReport())
	want := []string{
		"Dataset: 1000 pods in namespace cachebench, 22.9 KB of JSON each (managedFields 6.6 KB, last-applied 4.7 KB), 15.7 KB as protobuf.",
		"client-go typed, protobuf, streaming (client-go/typed/stream), pods: 33.2 KB per object; re-list peak 2.87x the live heap, initial-sync peak 1.31x; worst 1 ms-probe lateness 38 ms in a re-list (0.9 ms idle).",
		"client-go typed, strip managedFields, streaming: 25.8 KB per object (78% of client-go/typed/stream); re-list peak 3.10x, initial 1.42x; probe 38 ms.",
		"client-go metadata-only, LIST: 13.7 KB per object (41% of client-go/typed/stream); re-list peak 3.90x, initial 1.90x; probe 38 ms.",
		"client-go typed, JSON, LIST: failed (sync pods of client-go/typed-json/list: timed out after 10m0s).",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Summary (-want +got):\n%s", diff)
	}
}

func TestPlanAndDurationJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, Report{Schema: ReportSchema, Plan: DefaultPlan()}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"settle": "500ms"`) || !strings.Contains(b.String(), `"sampleEvery": "5ms"`) {
		t.Errorf("durations are not written as Go durations:\n%s", b.String())
	}
	bad := DefaultPlan()
	bad.Relists = -1
	if bad.Validate() == nil {
		t.Error("a plan with -1 re-lists validated")
	}
}
