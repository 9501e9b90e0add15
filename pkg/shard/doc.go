// Package shard splits work between the replicas of a controller with no
// coordinator: a consistent-hash Ring assigns every object key to one member,
// and a Membership says who the members are and which one this process is.
// Replicas that agree on the members agree on every owner without talking to
// each other.
//
// A Membership is one of:
//
//   - Static(i, n): shard i of n, assigned by the caller (a StatefulSet's
//     ordinal, a flag). The ring never changes.
//   - NewLeaseMembership: each replica creates and renews a
//     coordination.k8s.io Lease, as client-go's leader election renews a
//     leader's, and the ring is that of the live Leases, rebuilt when one
//     appears, is released or expires. A replica that cannot renew its own
//     Lease leaves the ring itself before the others take its keys.
//   - NewMembership: the caller sets the members as it learns them.
//
// For example, replicas coordinated by Leases, each working on its own keys:
//
//	m, err := shard.NewLeaseMembership(clientset, shard.LeaseConfig{Namespace: "shop-system", Group: "shop-controller"})
//	...
//	m.Start(ctx)              // renews the Lease; releases it when ctx ends
//	v, err := m.Wait(ctx)     // the ring, once the Lease is held and the others listed
//	if v.Owns(namespace, name, shard.ByObject) { ... }
//	<-v.Changed()             // a replica joined, left or died: read v again
//
// A Membership publishes each new ring as a Version, whose Changed channel
// closes when the next is published: a user holds a Version, owns the keys
// it says (Version.Owns, or Version.OwnsHash with KeyHashBytes, which does
// not allocate), and moves what changed when Changed closes.
//
// The ring hashes keys with rendezvous hashing over 16384 slots: a member that
// joins takes about 1/(n+1) of the keys and one that leaves gives away only
// its own. The hash (KeyHash) is part of the contract and never changes
// between versions, so that replicas of different versions agree during a
// rolling upgrade.
//
// Package leanstore's WithShard uses a Membership to keep only this replica's
// objects in every informer of a factory; docs/sharding.md describes both.
package shard
