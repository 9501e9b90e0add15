package conformance_test

import (
	"context"
	"testing"
	"time"

	"github.com/cachetune/cachetune/internal/conformance"
	"github.com/cachetune/cachetune/internal/leakcheck"
)

// TestShardUnion runs the sharding program (see conformance.RunShards):
// replica processes coordinated by Leases split 2,000 Pods while the writer
// creates, updates and deletes them; one replica is killed with SIGKILL and
// a new one joins during the writes; afterwards the union of the replicas'
// stores must equal a fresh consistent LIST, each held once, with the
// conformance checks applied to every replica and across the moves.
func TestShardUnion(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver (-short)")
	}
	leakcheck.Check(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const seed = 1
	res, err := conformance.RunShards(ctx, conformance.ShardConfig{Server: srv.Config, Kubeconfig: srv.Kubeconfig, Log: t.Logf}, seed)
	if err != nil {
		t.Fatalf("seed %d could not run: %v", seed, err)
	}
	t.Logf("%d writes during the rebalances; kill took %.1fs, join %.1fs; %d Pods at the end, held %v; LastSyncResourceVersion dips during rebalances %v; %s",
		res.Writes, res.KillSeconds, res.JoinSeconds, res.Pods, res.Held, res.RebalanceDips, res.Duration.Round(time.Second))
	for _, f := range res.Failures {
		t.Error(f)
	}
	if res.Failed() {
		return
	}
	if res.Writes == 0 {
		t.Error("no write was made during the rebalances")
	}
	// Each of the three live replicas holds about a third: within 20 %, six
	// standard deviations of a fair hash of 2,000 keys.
	fair := float64(res.Pods) / float64(len(res.Held))
	for id, n := range res.Held {
		if float64(n) < 0.8*fair || float64(n) > 1.2*fair {
			t.Errorf("replica %s holds %d of %d Pods, want within 20%% of %.0f", id, n, res.Pods, fair)
		}
	}
	if len(res.Held) != 3 {
		t.Errorf("live replicas at the end: %v, want a, b and d", res.Held)
	}
}
