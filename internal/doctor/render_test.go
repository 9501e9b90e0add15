package doctor

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixtureReport is a small, fixed report: Pods measured with every finding
// (projections, a stuck object, a loop, a ping-pong), Widgets measured without
// protobuf, Secrets forbidden. Its recommendations are computed, so the golden
// files also pin what the doctor recommends.
func fixtureReport() *Report {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	proj := func(base float64, per ...float64) []Projection {
		modes := append(append([]struct{ mode, title string }{}, typedModes...), metadataModes...)
		var out []Projection
		for i, p := range per {
			out = append(out, Projection{Mode: modes[i].mode, Title: modes[i].title, PerObject: p, Total: int64(p * 10000), Saving: 1 - p/base})
		}
		return out
	}
	r := &Report{
		Schema: Schema, Generated: at,
		Cluster:   Cluster{Host: "https://127.0.0.1:6443", ServerVersion: "v1.37.2"},
		Namespace: "",
		Settings: Settings{Sample: 200, PageSize: 500, WatchSeconds: 30, StuckAfterSeconds: 600,
			LoopThreshold: 5, PingPongTurns: 4, ChurnWindowSeconds: 30},
		StreamingLists: Streaming{Supported: Supported, Resource: "widgets.bench.cachetune.dev",
			Detail: "the initial events ended with a k8s.io/initial-events-end bookmark", Seconds: 0.02},
		Resources: []Resource{
			{
				Resource: "pods", Version: "v1", Kind: "Pod", Namespaced: true, BuiltIn: true,
				Access: Access{Checked: true, List: true, Watch: true}, Objects: 10000, Namespaces: 3,
				TopNamespaces: []NamespaceCount{{"shop", 8000}, {"ledger", 1500}, {"ops", 500}},
				JSON:          Bytes{Total: 229_000_000, PerObject: 22_900},
				Protobuf:      &Bytes{Total: 177_000_000, PerObject: 17_700},
				ManagedFields: Share{Total: 66_000_000, PerObject: 6_600, Share: 0.288},
				LastApplied:   Share{Total: 64_000_000, PerObject: 6_400, Share: 0.279},
				Largest: []Object{
					{Namespace: "shop", Name: "checkout-7d9f-00017", JSON: 31_200, ManagedFields: 9_100, LastApplied: 8_800},
					{Namespace: "ledger", Name: "ledger-5c4b-00002", JSON: 24_000, ManagedFields: 6_700, LastApplied: 6_500},
				},
				List:        Latency{Format: formatProtobuf, PageSize: 500, Pages: 20, FirstPageSeconds: 0.061, AllSeconds: 1.374},
				Sampled:     200,
				Projections: proj(34_700, 34_700, 27_300, 20_700, 4_100, 16_300, 8_900),
				Stuck: []Stuck{{Namespace: "shop", Name: "checkout-7d9f-00003", Since: at.Add(-2 * time.Hour), AgeSeconds: 7200,
					Finalizers: []string{"shop.example.com/drain"}}},
				Churn: &Churn{Seconds: 30, Updates: map[string]int{"status": 61, "metadata": 14},
					Findings: []Finding{
						{Kind: "loop", Namespace: "shop", Name: "checkout-7d9f-00011", Managers: []string{"heartbeat-controller"}, Updates: 28},
						{Kind: "ping-pong", Namespace: "shop", Name: "cart-6b7c-00001", Managers: []string{"alice-controller", "bob-controller"}, Updates: 9},
					}},
			},
			{
				Resource: "secrets", Version: "v1", Kind: "Secret", Namespaced: true, BuiltIn: true,
				Access: Access{Checked: true, Reason: "list: no RBAC rule allows it; watch: no RBAC rule allows it"},
				Error:  "forbidden: may not list secrets in all namespaces",
				Stuck:  nil,
			},
			{
				Resource: "widgets.bench.cachetune.dev", Group: "bench.cachetune.dev", Version: "v1", Kind: "Widget", Namespaced: true,
				Access: Access{Checked: true, List: true, Watch: true}, Objects: 30, Namespaces: 1,
				TopNamespaces: []NamespaceCount{{"shop", 30}},
				JSON:          Bytes{Total: 183_000, PerObject: 6_100},
				ManagedFields: Share{Total: 24_000, PerObject: 800, Share: 0.131},
				LastApplied:   Share{Total: 69_000, PerObject: 2_300, Share: 0.377},
				Largest:       []Object{{Namespace: "shop", Name: "widget-00028", JSON: 6_100, ManagedFields: 800, LastApplied: 2_300}},
				List:          Latency{Format: formatJSON, PageSize: 500, Pages: 1, FirstPageSeconds: 0.017, AllSeconds: 0.017},
				Sampled:       30,
				Stuck:         []Stuck{},
				Churn:         &Churn{Seconds: 30, Updates: map[string]int{}},
			},
		},
	}
	r.Recommendations = recommend(r)
	return r
}

func TestGoldenReports(t *testing.T) {
	for _, tc := range []struct {
		file  string
		write func(*bytes.Buffer, *Report) error
	}{
		{"report.golden.txt", func(b *bytes.Buffer, r *Report) error { return WriteTable(b, r) }},
		{"report.golden.md", func(b *bytes.Buffer, r *Report) error { return WriteMarkdown(b, r) }},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b, fixtureReport()); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Errorf("%s differs (-want +got), run with -update if the change is meant:\n%s", tc.file, diff)
			}
		})
	}
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
		t.Errorf("report after a JSON round trip (-want +got):\n%s", diff)
	}
}

func TestReadJSONRejectsOtherSchemas(t *testing.T) {
	if _, err := ReadJSON(bytes.NewBufferString(`{"schema":"cachetune.dev/bench/v1"}`)); err == nil {
		t.Error("a report of another schema was read without an error")
	}
}
