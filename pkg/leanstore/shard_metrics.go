package leanstore

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// shardCollector reports the sharded informers of a factory (WithShard), each
// labelled with this replica's name in the ring, so that a dashboard can put
// the replicas' shares side by side.
type shardCollector struct {
	informers   func() []*Informer
	constLabels prometheus.Labels
	once        sync.Once
	objects     *prometheus.Desc
	members     *prometheus.Desc
	rebalancing *prometheus.Desc
	rebalances  *prometheus.Desc
	skipped     *prometheus.Desc
}

func newShardCollector(informers func() []*Informer, constLabels prometheus.Labels) *shardCollector {
	return &shardCollector{informers: informers, constLabels: constLabels}
}

func (c *shardCollector) init() {
	c.once.Do(func() {
		labels := []string{"informer", "resource", "shard"}
		c.objects = prometheus.NewDesc("cachetune_leanstore_shard_objects", "Objects held by a sharded leanstore informer: this replica's share.", labels, c.constLabels)
		c.members = prometheus.NewDesc("cachetune_leanstore_shard_members", "Members of the shard ring whose objects the informer holds.", labels, c.constLabels)
		c.rebalancing = prometheus.NewDesc("cachetune_leanstore_shard_rebalancing", "1 while the shard ring has changed and the informer has not yet taken its part.", labels, c.constLabels)
		c.rebalances = prometheus.NewDesc("cachetune_leanstore_shard_rebalances_total", "Re-lists of a sharded informer after a change of the ring.", labels, c.constLabels)
		c.skipped = prometheus.NewDesc("cachetune_leanstore_shard_skipped_total", "Objects of other shards dropped before decoding, from lists and from watch events (stage).", append(labels, "stage"), c.constLabels)
	})
}

func (c *shardCollector) Describe(ch chan<- *prometheus.Desc) {
	c.init()
	ch <- c.objects
	ch <- c.members
	ch <- c.rebalancing
	ch <- c.rebalances
	ch <- c.skipped
}

func (c *shardCollector) Collect(ch chan<- prometheus.Metric) {
	c.init()
	for _, inf := range c.informers() {
		if inf.shard == nil {
			continue
		}
		st := inf.shard.Status()
		if st.Error != "" {
			continue
		}
		lv := []string{inf.name, inf.resource.String(), st.Self}
		rebalancing := 0.0
		if st.Rebalancing {
			rebalancing = 1
		}
		ch <- prometheus.MustNewConstMetric(c.objects, prometheus.GaugeValue, float64(len(inf.GetStore().ListKeys())), lv...)
		ch <- prometheus.MustNewConstMetric(c.members, prometheus.GaugeValue, float64(len(st.Members)), lv...)
		ch <- prometheus.MustNewConstMetric(c.rebalancing, prometheus.GaugeValue, rebalancing, lv...)
		ch <- prometheus.MustNewConstMetric(c.rebalances, prometheus.CounterValue, float64(st.Rebalances), lv...)
		ch <- prometheus.MustNewConstMetric(c.skipped, prometheus.CounterValue, float64(st.SkippedListed), append(lv, "list")...)
		ch <- prometheus.MustNewConstMetric(c.skipped, prometheus.CounterValue, float64(st.SkippedEvents), append(lv, "watch")...)
	}
}
