package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/reconcile"
)

// counter returns the value of the sample of family whose labels include
// want, summing matches; 0 when there is none.
func counter(t *testing.T, g prometheus.Gatherer, family string, want map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, m := range mf.GetMetric() {
			if matches(m, want) {
				sum += value(m)
			}
		}
	}
	return sum
}

func matches(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, lp := range m.GetLabel() {
		got[lp.GetName()] = lp.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

func TestMetrics(t *testing.T) {
	leakcheck.Check(t)
	reg := prometheus.NewRegistry()
	l := reconcile.New("widgets", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		switch req.Key.Name {
		case "flaky":
			return reconcile.Result{}, apierrors.NewServiceUnavailable("etcd leader change")
		case "invalid":
			return reconcile.Result{}, failure.Reconcile(failure.InvalidSpec, req.Key.String(), errors.New("spec.size must be positive"))
		}
		return reconcile.Result{}, nil
	},
		reconcile.WithMetrics(reg),
		reconcile.WithLogger(quiet()),
		reconcile.WithBackoff(reconcile.Backoff{Initial: time.Hour, Factor: 2, Cap: time.Hour}),
	)
	start(t, l)
	for _, name := range []string{"ok", "flaky", "invalid"} {
		l.Enqueue(cache.NewObjectName("ns", name))
	}
	eventually(t, 5*time.Second, "three reconciles", func() bool {
		return counter(t, reg, "cachetune_reconcile_total", nil) == 3
	})
	c := map[string]string{"controller": "widgets"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{"controller": "widgets"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	checks := []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"cachetune_reconcile_total", with("outcome", "success"), 1},
		{"cachetune_reconcile_total", with("outcome", "retry"), 1},
		{"cachetune_reconcile_total", with("outcome", "parked"), 1},
		{"cachetune_reconcile_errors_total", with("reason", "ServiceUnavailable", "cause", "ServiceUnavailable", "kind", "transient"), 1},
		{"cachetune_reconcile_errors_total", with("reason", "InvalidSpec", "cause", "InvalidSpec", "kind", "permanent"), 1},
		{"cachetune_reconcile_duration_seconds", c, 3},
		{"cachetune_reconcile_triggers_total", with("trigger", "enqueued"), 3},
		{"cachetune_reconcile_backoff_keys", c, 1},
		{"cachetune_reconcile_parked_keys", c, 1},
		{"cachetune_reconcile_scheduled_keys", c, 1},
		{"cachetune_reconcile_queue_depth", c, 0},
		{"cachetune_reconcile_workers", c, 2},
	}
	for _, ch := range checks {
		if got := counter(t, reg, ch.family, ch.labels); got != ch.want {
			t.Errorf("%s%v = %v, want %v", ch.family, ch.labels, got, ch.want)
		}
	}
}
