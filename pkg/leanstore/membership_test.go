package leanstore

import (
	"testing"

	"github.com/cachetune/cachetune/pkg/shard"
)

// The deprecated names are package shard's, so that a program written against
// them compiles unchanged and passes its values to either package.
func TestShardNamesAreAliases(t *testing.T) {
	m, err := StaticShards(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	var sm *shard.Membership = m
	if got := WithShard(sm, ShardByObject); got == nil {
		t.Fatal("WithShard returned no option")
	}
	if ShardBy(ShardByObject) != shard.ByObject || ShardByNamespace != shard.ByNamespace || ShardGroupLabel != shard.GroupLabel {
		t.Errorf("aliases %q %q %q differ from package shard's", ShardByObject, ShardByNamespace, ShardGroupLabel)
	}
	if sm.Self() != "shard-1" {
		t.Errorf("StaticShards(1, 3) is %q, want shard-1", sm.Self())
	}
	var cfg LeaseConfig = shard.LeaseConfig{Namespace: "ns", Group: "ctl", Identity: "a"}
	if _, err := NewLeaseMembership(nil, cfg); err == nil {
		t.Error("NewLeaseMembership without a client returned no error")
	}
}
