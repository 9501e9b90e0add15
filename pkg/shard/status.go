package shard

import "time"

// MembershipStatus is the state of a Membership.
type MembershipStatus struct {
	// Kind is "static", "leases" or "manual".
	Kind string `json:"kind"`
	Self string `json:"self"`
	// Ready is false until a Lease membership holds its Lease and has listed
	// the others' (a manual one: until its first Set).
	Ready bool `json:"ready"`
	// Member is false while this replica is not in the ring: its Lease could
	// not be renewed within the renew deadline, and it holds nothing.
	Member bool `json:"member"`
	// Members are the ring's members, sorted.
	Members []string `json:"members"`
	// Generation counts the versions of the ring this process has seen.
	Generation uint64    `json:"generation"`
	ChangedAt  time.Time `json:"changedAt,omitzero"`
	// Lease is namespace/name of this replica's Lease (Lease memberships).
	Lease string `json:"lease,omitempty"`
	// LastRenew is when the Lease was last renewed.
	LastRenew time.Time `json:"lastRenew,omitzero"`
	// LastError is the last failure to renew the Lease or list the others.
	LastError string `json:"lastError,omitempty"`
}
