package doctor

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Factors of a shard plan, each from a measurement named beside it.
const (
	// shardImbalance is the most a replica may hold above its fair share when
	// objects are sharded by object: the ring's balance target (the largest
	// share measured on 10,000 keys and 3 members was 3.4% above a third,
	// TestRingBalance in pkg/leanstore).
	shardImbalance = 1.10
	// shardPeak is a replica's heap peak over its live heap while ownership
	// moves (a replica joins or dies): the bound `cachebench shard` checks
	// (bench/results/cachebench-shard.txt).
	shardPeak = 1.30
)

// ShardPlan is the cache heap per replica for 1..N shards of the examined
// resources in one leanstore mode, and the smallest count whose peak fits a
// memory budget.
type ShardPlan struct {
	// Mode is the projected mode the plan is made of: leanstore's defaults
	// (strip managedFields) for built-in kinds and custom resources alike.
	Mode string `json:"mode"`
	// Budget is the memory budget per replica, in bytes, for the cache's
	// peak; 0 when none was given.
	Budget int64 `json:"budget"`
	// Total is the projected cache of one replica holding everything.
	Total int64 `json:"total"`
	// LargestNamespace is the projected cache of the largest namespace's
	// objects: the floor of a replica's share under namespace sharding.
	LargestNamespace int64       `json:"largestNamespace"`
	Rows             []ShardRows `json:"rows"`
	// Recommended is the smallest shard count whose peak per replica fits
	// the budget by object (0 when none up to the largest count does, or no
	// budget was given); RecommendedByNamespace the same under namespace
	// sharding.
	Recommended            int `json:"recommended"`
	RecommendedByNamespace int `json:"recommendedByNamespace"`
}

// ShardRows is one shard count of a plan.
type ShardRows struct {
	Shards int `json:"shards"`
	// ByObject is the largest replica's cache with shard.ByObject, and
	// ByObjectPeak its heap peak while ownership moves.
	ByObject     int64 `json:"byObject"`
	ByObjectPeak int64 `json:"byObjectPeak"`
	// ByNamespace is the same with ShardByNamespace: never below the largest
	// namespace's share.
	ByNamespace     int64 `json:"byNamespace"`
	ByNamespacePeak int64 `json:"byNamespacePeak"`
}

// PlanShards projects the cache heap per replica for 1 to maxShards shards of
// the report's resources, with the per-object sizes of leanstore's default
// mode (strip managedFields), and recommends the smallest count whose peak
// fits budget bytes (no recommendation when budget is 0).
func PlanShards(r *Report, budget int64, maxShards int) (ShardPlan, error) {
	if maxShards < 1 {
		return ShardPlan{}, fmt.Errorf("doctor: shard plan: the largest shard count must be at least 1, got %d", maxShards)
	}
	if budget < 0 {
		return ShardPlan{}, fmt.Errorf("doctor: shard plan: memory budget %d is negative", budget)
	}
	p := ShardPlan{Mode: "leanstore defaults: strip managedFields", Budget: budget}
	for _, res := range r.Resources {
		if len(res.Projections) <= projStripManagedFields {
			continue
		}
		perObject := res.Projections[projStripManagedFields].PerObject
		p.Total += int64(perObject * float64(res.Objects))
		if len(res.TopNamespaces) > 0 {
			// A namespace holds every kind: the largest namespace's share is
			// counted per resource, as if the largest were one namespace.
			p.LargestNamespace += int64(perObject * float64(res.TopNamespaces[0].Objects))
		}
	}
	if p.Total == 0 {
		return p, errors.New("doctor: shard plan: no resource was measured")
	}
	for n := 1; n <= maxShards; n++ {
		share := float64(p.Total) / float64(n)
		byObject := int64(share * shardImbalance)
		if n == 1 {
			byObject = p.Total
		}
		byNamespace := max(byObject, p.LargestNamespace)
		row := ShardRows{Shards: n, ByObject: byObject, ByObjectPeak: int64(float64(byObject) * shardPeak),
			ByNamespace: byNamespace, ByNamespacePeak: int64(float64(byNamespace) * shardPeak)}
		p.Rows = append(p.Rows, row)
		if budget > 0 && p.Recommended == 0 && row.ByObjectPeak <= budget {
			p.Recommended = n
		}
		if budget > 0 && p.RecommendedByNamespace == 0 && row.ByNamespacePeak <= budget {
			p.RecommendedByNamespace = n
		}
	}
	return p, nil
}

// WriteShardPlan writes the plan as a table and a sentence of advice.
func WriteShardPlan(w io.Writer, p ShardPlan) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nSHARDS (cache heap per replica, %s; peak = %.1fx while ownership moves, by-object share +%.0f%% for imbalance)\n",
		p.Mode, shardPeak, (shardImbalance-1)*100)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "shards\tby object\tpeak\tby namespace\tpeak")
	for _, r := range p.Rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", r.Shards, mib(r.ByObject), mib(r.ByObjectPeak), mib(r.ByNamespace), mib(r.ByNamespacePeak))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	last := p.Rows[len(p.Rows)-1].Shards
	switch {
	case p.Budget == 0:
		fmt.Fprintln(&b, "Give --memory-budget for a recommended shard count.")
	case p.Recommended == 1:
		fmt.Fprintf(&b, "One replica fits the budget of %s: no sharding needed.\n", mib(p.Budget))
	case p.Recommended == 0:
		fmt.Fprintf(&b, "No shard count up to %d fits the budget of %s per replica: strip more first (see the memory recommendations), or raise --max-shards.\n", last, mib(p.Budget))
	default:
		fmt.Fprintf(&b, "Recommended: %d shards by object (leanstore.WithShard(m, shard.ByObject)) for a budget of %s per replica", p.Recommended, mib(p.Budget))
		if p.RecommendedByNamespace == 0 {
			fmt.Fprintf(&b, "; by namespace no count up to %d fits: the largest namespace alone peaks at %s.\n", last, mib(int64(float64(p.LargestNamespace)*shardPeak)))
		} else {
			fmt.Fprintf(&b, "; %d by namespace.\n", p.RecommendedByNamespace)
		}
		fmt.Fprintln(&b, "Sharding divides memory, not traffic: every replica still receives every object from the server (docs/sharding.md).")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
