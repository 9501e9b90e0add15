package shard

import (
	"fmt"
	"slices"
)

// ringSlots is the number of slots of a ring. A key's hash picks a slot and
// the slot names its member, so finding an object's owner is one hash and one
// table read, whatever the number of members. 16384 slots keep each member's
// share within about 1% (one standard deviation) of its fair share with 3
// members, and the table takes 32 KiB.
const ringSlots = 1 << 14

// MaxMembers bounds the members of a ring: slot owners are uint16.
const MaxMembers = 1 << 15

// Ring is a consistent-hash ring over a set of members: it assigns every
// object key to one member, so that replicas that agree on the members agree
// on every object's owner without talking to each other.
//
// The ring has 16384 slots. Each slot belongs to the member with the highest
// hash of (member, slot) — rendezvous hashing — so that when a member leaves
// only its slots move (each to the member that ranked second there), and when
// one joins it takes only the slots where it ranks first, about 1/(n+1) of
// them. Keys are hashed by KeyHash, which is part of the ring's contract and
// never changes between versions, so that replicas of different versions
// agree.
//
// A Ring is immutable and safe for concurrent use.
type Ring struct {
	members []string
	// slots[i] is the index in members of slot i's owner.
	slots []uint16
}

// NewRing returns the ring of these members (names, in any order; duplicates
// count once). A ring without members owns nothing.
func NewRing(members ...string) (*Ring, error) {
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	if len(ms) > 0 && ms[0] == "" {
		return nil, fmt.Errorf("shard: a ring member needs a name")
	}
	if len(ms) > MaxMembers {
		return nil, fmt.Errorf("shard: a ring of %d members exceeds %d", len(ms), MaxMembers)
	}
	r := &Ring{members: ms}
	if len(ms) == 0 {
		return r, nil
	}
	seeds := make([]uint64, len(ms))
	for i, m := range ms {
		seeds[i] = fnvString(fnvOffset, m)
	}
	r.slots = make([]uint16, ringSlots)
	for s := range r.slots {
		best, bestScore := 0, uint64(0)
		for i, seed := range seeds {
			if score := mix(seed ^ (uint64(s)+1)*0x9e3779b97f4a7c15); i == 0 || score > bestScore {
				best, bestScore = i, score
			}
		}
		r.slots[s] = uint16(best)
	}
	return r, nil
}

// Members returns the ring's members, sorted.
func (r *Ring) Members() []string { return slices.Clone(r.members) }

// Len is the number of members.
func (r *Ring) Len() int { return len(r.members) }

// Owner returns the member that owns the object with this namespace and name
// ("" for a cluster-scoped object), or "" when the ring has no members.
func (r *Ring) Owner(namespace, name string, by By) string {
	if len(r.members) == 0 {
		return ""
	}
	return r.members[r.OwnerIndex(KeyHash(namespace, name, by))]
}

// Index returns the index of member m in Members, or -1 when m is not a
// member.
func (r *Ring) Index(m string) int {
	i, ok := slices.BinarySearch(r.members, m)
	if !ok {
		return -1
	}
	return i
}

// OwnerIndex returns the index in Members of the owner of the key with this
// hash (KeyHash or KeyHashBytes), or -1 when the ring has no members. It does
// not allocate.
func (r *Ring) OwnerIndex(keyHash uint64) int {
	if len(r.members) == 0 {
		return -1
	}
	return int(r.slots[keyHash&(ringSlots-1)])
}

// sameShare reports whether member i of r owns the same slots as member j
// of o.
func (r *Ring) sameShare(i int, o *Ring, j int) bool {
	for s := range r.slots {
		if (int(r.slots[s]) == i) != (int(o.slots[s]) == j) {
			return false
		}
	}
	return true
}
