package doctor

import (
	"bytes"
	"strings"
	"testing"
)

// planReport is a report of 10,000 Pods of 20 KB each (leanstore's default
// mode) in 10 namespaces, the largest holding 4,000.
func planReport() *Report {
	proj := make([]Projection, 6)
	proj[projStripManagedFields].PerObject = 20000
	return &Report{Resources: []Resource{{
		Resource: "pods", Objects: 10000, Projections: proj,
		TopNamespaces: []NamespaceCount{{Namespace: "big", Objects: 4000}, {Namespace: "small", Objects: 1000}},
	}}}
}

func TestPlanShards(t *testing.T) {
	const total = 10000 * 20000
	for _, tc := range []struct {
		name            string
		budget          int64
		want, wantByNS  int
		wantAdviceWords string
	}{
		// 1 shard peaks at 1.3 x 200 MB = 260 MB.
		{"one replica fits", 300e6, 1, 1, "no sharding needed"},
		// 3 shards: 200/3 x 1.1 x 1.3 = 95.3 MB; the largest namespace alone 80 MB x 1.3 = 104 MB.
		{"by object only", 100e6, 3, 0, "the largest namespace alone"},
		{"both", 110e6, 3, 3, "3 by namespace"},
		{"nothing fits", 10e6, 0, 0, "No shard count up to 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanShards(planReport(), tc.budget, 8)
			if err != nil {
				t.Fatal(err)
			}
			if p.Total != total || p.LargestNamespace != 4000*20000 || len(p.Rows) != 8 {
				t.Fatalf("total %d, largest namespace %d, %d rows", p.Total, p.LargestNamespace, len(p.Rows))
			}
			if p.Recommended != tc.want || p.RecommendedByNamespace != tc.wantByNS {
				t.Errorf("recommended %d by object and %d by namespace, want %d and %d (rows %+v)", p.Recommended, p.RecommendedByNamespace, tc.want, tc.wantByNS, p.Rows)
			}
			if r := p.Rows[3]; r.ByObject != int64(total/4*shardImbalance) || r.ByNamespace != 4000*20000 {
				t.Errorf("4 shards: %+v", r)
			}
			var b bytes.Buffer
			if err := WriteShardPlan(&b, p); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.wantAdviceWords) {
				t.Errorf("advice does not say %q:\n%s", tc.wantAdviceWords, b.String())
			}
		})
	}
	if _, err := PlanShards(&Report{}, 1, 4); err == nil {
		t.Error("a plan of a report without measured resources gave no error")
	}
	if _, err := PlanShards(planReport(), 1, 0); err == nil {
		t.Error("a plan up to 0 shards gave no error")
	}
}
