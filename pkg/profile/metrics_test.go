package profile_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cachetune/cachetune/internal/leakcheck"
	cprofile "github.com/cachetune/cachetune/pkg/profile"
)

// runtimeFamilies are the runtime metrics /metrics must carry, with their type.
var runtimeFamilies = map[string]dto.MetricType{
	"go_sched_latencies_seconds":                dto.MetricType_HISTOGRAM,
	"go_sched_pauses_total_gc_seconds":          dto.MetricType_HISTOGRAM,
	"go_cpu_classes_gc_total_cpu_seconds_total": dto.MetricType_COUNTER,
	"go_memory_classes_heap_objects_bytes":      dto.MetricType_GAUGE,
	"go_gc_heap_goal_bytes":                     dto.MetricType_GAUGE,
	"go_sched_goroutines_goroutines":            dto.MetricType_GAUGE,
	"process_resident_memory_bytes":             dto.MetricType_GAUGE,
}

func scrape(t *testing.T, s *cprofile.Server) map[string]*dto.MetricFamily {
	t.Helper()
	status, body := get(t, s, "/metrics")
	if status != http.StatusOK {
		t.Fatalf("/metrics: status %d: %s", status, truncate(body))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

func TestMetricsRuntimeHistograms(t *testing.T) {
	leakcheck.Check(t)
	s := startServer(t)
	fams := scrape(t, s)
	for name, typ := range runtimeFamilies {
		f, ok := fams[name]
		if !ok {
			t.Errorf("/metrics lacks %s", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s is a %v, want %v", name, f.GetType(), typ)
		}
	}
	// The scheduler histogram has real buckets and samples.
	if f := fams["go_sched_latencies_seconds"]; f != nil {
		h := f.GetMetric()[0].GetHistogram()
		if len(h.GetBucket()) < 5 || h.GetSampleCount() == 0 {
			t.Errorf("go_sched_latencies_seconds: %d buckets, %d samples; want a populated histogram", len(h.GetBucket()), h.GetSampleCount())
		}
	}
}

func TestMetricsSharedRegistry(t *testing.T) {
	leakcheck.Check(t)
	reg := prometheus.NewRegistry()
	// What prometheus.DefaultRegisterer holds: the stock collectors.
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mine := prometheus.NewCounter(prometheus.CounterOpts{Name: "controller_reconciles_total", Help: "test"})
	reg.MustRegister(mine)

	s, err := cprofile.Start(t.Context(), cprofile.WithAddr("127.0.0.1:0"), cprofile.WithMetrics(reg))
	if err != nil {
		t.Fatalf("Start with a registry holding the stock Go collector: %v", err)
	}
	fams := scrape(t, s)
	for _, name := range []string{"controller_reconciles_total", "go_sched_latencies_seconds", "go_goroutines"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("/metrics on a shared registry lacks %s", name)
		}
	}
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}

	// Shutdown puts the stock collectors back.
	after, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range after {
		names[f.GetName()] = true
	}
	if !names["go_goroutines"] || !names["process_resident_memory_bytes"] || !names["controller_reconciles_total"] {
		t.Errorf("after Shutdown the registry lost collectors: %v", names)
	}
	if names["go_sched_latencies_seconds"] {
		t.Errorf("after Shutdown the registry still has the runtime collector")
	}
}

// An option out of range is Start's error, naming it.
func TestStartRejectsInvalidOptions(t *testing.T) {
	for _, c := range []struct {
		opt  cprofile.Option
		want string
	}{
		{cprofile.WithReadinessTimeout(0), "WithReadinessTimeout"},
		{cprofile.WithReadiness("nil", nil), "WithReadiness"},
		{cprofile.WithMetrics(prometheus.WrapRegistererWithPrefix("x_", prometheus.NewRegistry())), "WithMetrics"},
	} {
		s, err := cprofile.Start(t.Context(), cprofile.WithAddr("127.0.0.1:0"), c.opt)
		if err == nil {
			_ = s.Shutdown(t.Context()) // only reached when Start wrongly succeeded
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Start with %s: err = %v, want an error naming it", c.want, err)
		}
	}
}
