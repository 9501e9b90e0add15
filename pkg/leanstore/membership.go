package leanstore

import (
	"k8s.io/client-go/kubernetes"

	"github.com/cachetune/cachetune/pkg/shard"
)

// The shard ring, memberships and Leases live in package shard, usable
// without leanstore. These names stay for programs written against earlier
// releases.

// Membership is shard.Membership.
//
// Deprecated: use shard.Membership.
type Membership = shard.Membership

// LeaseConfig is shard.LeaseConfig.
//
// Deprecated: use shard.LeaseConfig.
type LeaseConfig = shard.LeaseConfig

// ShardBy is shard.By.
//
// Deprecated: use shard.By.
type ShardBy = shard.By

const (
	// ShardByObject is shard.ByObject.
	//
	// Deprecated: use shard.ByObject.
	ShardByObject = shard.ByObject
	// ShardByNamespace is shard.ByNamespace.
	//
	// Deprecated: use shard.ByNamespace.
	ShardByNamespace = shard.ByNamespace
)

// ShardGroupLabel is shard.GroupLabel.
//
// Deprecated: use shard.GroupLabel.
const ShardGroupLabel = shard.GroupLabel

// StaticShards is shard.Static.
//
// Deprecated: use shard.Static.
func StaticShards(index, total int) (*shard.Membership, error) { return shard.Static(index, total) }

// NewLeaseMembership is shard.NewLeaseMembership.
//
// Deprecated: use shard.NewLeaseMembership.
func NewLeaseMembership(client kubernetes.Interface, cfg shard.LeaseConfig) (*shard.Membership, error) {
	return shard.NewLeaseMembership(client, cfg)
}
