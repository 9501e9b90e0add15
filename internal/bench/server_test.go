package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cachetune/cachetune/internal/leakcheck"
)

// metricsText is what a kube-apiserver v1.37 serves on /metrics for these
// counters, trimmed to a few resources.
const metricsText = `# HELP etcd_requests_total [ALPHA] Etcd request counts for each operation and object type.
# TYPE etcd_requests_total counter
etcd_requests_total{group="",operation="get",resource="pods"} 207
etcd_requests_total{group="",operation="list",resource="pods"} 4
etcd_requests_total{group="",operation="listWithCount",resource="pods"} 1
etcd_requests_total{group="",operation="list",resource="configmaps"} 9
etcd_requests_total{group="bench.cachetune.dev",operation="list",resource="widgets"} 2
apiserver_storage_list_fetched_objects_total{group="",index="",resource="pods",storage="watchcache"} 400
apiserver_storage_list_fetched_objects_total{group="",index="",resource="pods",storage="etcd"} 30000
apiserver_storage_list_fetched_objects_total{group="bench.cachetune.dev",index="",resource="widgets",storage="etcd"} 50
apiserver_storage_list_total{group="",index="",resource="pods",storage="watchcache"} 2
apiserver_storage_list_total{group="",index="",resource="pods",storage="etcd"} 5
apiserver_init_events_total{group="",resource="pods"} 10000
apiserver_init_events_total{group="",resource="secrets"} 7
`

func TestParseStorageCounts(t *testing.T) {
	for _, tc := range []struct {
		resources []schema.GroupResource
		want      StorageCounts
	}{
		{[]schema.GroupResource{{Resource: "pods"}}, StorageCounts{EtcdLists: 5, EtcdObjects: 30000, CacheLists: 2, CacheObjects: 400, StreamObjects: 10000}},
		{[]schema.GroupResource{{Resource: "pods"}, {Group: "bench.cachetune.dev", Resource: "widgets"}},
			StorageCounts{EtcdLists: 7, EtcdObjects: 30050, CacheLists: 2, CacheObjects: 400, StreamObjects: 10000}},
		// A resource of another group with the same name is not counted.
		{[]schema.GroupResource{{Resource: "widgets"}}, StorageCounts{}},
	} {
		got, err := ParseStorageCounts(strings.NewReader(metricsText), tc.resources)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tc.resources, diff)
		}
	}
}

func TestParseStatCPU(t *testing.T) {
	// The command holds spaces and a parenthesis, as a command may.
	line := []byte("4242 (kube apiserver) (x)) S 1 4242 4242 0 -1 4194560 81234 0 12 0 1234 567 0 0 20 0 31 0 9876 2147483648 100000 18446744073709551615\n")
	if got, ok := parseStatCPU(line); !ok || got != 1234+567 {
		t.Errorf("parseStatCPU = %d, %v; want %d", got, ok, 1234+567)
	}
	if _, ok := parseStatCPU([]byte("12 (short) S 1 2")); ok {
		t.Error("parseStatCPU accepted a truncated line")
	}
}

// TestProcReaderReadsThisProcess reads this test process as the server: its
// CPU time grows with work, and its RSS is that of /proc/self/statm.
func TestProcReaderReadsThisProcess(t *testing.T) {
	p, err := openProc(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer func() { _ = p.Close() }()
	cpu0, rss, err := p.read()
	if err != nil || rss == 0 {
		t.Fatalf("read: %v, RSS %d", err, rss)
	}
	// Spin until the process has used 60 ms of CPU by its own account
	// (getrusage), several of the clock ticks /proc counts in: 60 ms of wall
	// clock may give it none on a loaded machine.
	spun := selfCPU()
	for deadline := time.Now().Add(30 * time.Second); selfCPU()-spun < 60*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatal("60 ms of CPU not had in 30 s")
		}
	}
	cpu1, _, err := p.read()
	if err != nil || cpu1 <= cpu0 {
		t.Errorf("CPU time %v after spinning 60 ms of CPU, %v before (%v)", cpu1, cpu0, err)
	}
}

func TestServerSamplerCost(t *testing.T) {
	leakcheck.Check(t)
	base := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var s serverSampler
	for i, rss := range []uint64{100, 120, 500, 300, 200} {
		s.samples.add(serverSample{at: base.Add(time.Duration(i) * time.Second), cpu: time.Duration(i*i) * time.Second, rss: rss})
	}
	// From the sample at 1 s to the first at or after 3.5 s (at 4 s).
	got := s.cost(base.Add(time.Second), base.Add(3500*time.Millisecond))
	want := ServerCost{CPUSeconds: 16 - 1, PeakRSS: 500, StartRSS: 120}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cost (-want +got):\n%s", diff)
	}

	// The sampler reads a live process.
	live, err := startServerSampler(context.Background(), os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// It samples every serverSampleEvery: wait for a sample (bounded) rather
	// than sleep a few periods, which a loaded machine may not give it.
	from := time.Now()
	c := live.cost(from, time.Now())
	for deadline := time.Now().Add(30 * time.Second); c.PeakRSS == 0 && time.Now().Before(deadline); c = live.cost(from, time.Now()) {
		time.Sleep(serverSampleEvery)
	}
	live.stop()
	if c.PeakRSS == 0 {
		t.Errorf("a live sampler read %+v in 30 s", c)
	}
}
