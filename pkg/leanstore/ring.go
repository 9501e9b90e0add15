package leanstore

import (
	"fmt"
	"slices"
)

// ShardBy says what of an object decides its shard.
type ShardBy string

const (
	// ShardByObject hashes each object's namespace and name: the objects
	// spread evenly over the replicas, whatever the namespaces.
	ShardByObject ShardBy = "object"
	// ShardByNamespace hashes each object's namespace, so that one replica
	// holds every object of a namespace: for controllers that join objects
	// of one namespace (a Service and its Pods). A cluster-scoped object is
	// hashed by its name as if it were a namespace, so that a Namespace
	// object goes with the objects in it.
	ShardByNamespace ShardBy = "namespace"
)

func (b ShardBy) valid() bool { return b == ShardByObject || b == ShardByNamespace }

// ringSlots is the number of slots of a ring. A key's hash picks a slot and
// the slot names its member, so finding an object's owner is one hash and one
// table read, whatever the number of members. 16384 slots keep each member's
// share within about 1% (one standard deviation) of its fair share with 3
// members, and the table takes 32 KiB.
const ringSlots = 1 << 14

// Ring is a consistent-hash ring over a set of members: it assigns every
// object key to one member, so that replicas that agree on the members agree
// on every object's owner without talking to each other.
//
// The ring has ringSlots slots. Each slot belongs to the member with the
// highest hash of (member, slot) — rendezvous hashing — so that when a member
// leaves only its slots move (each to the member that ranked second there),
// and when one joins it takes only the slots where it ranks first, about
// 1/(n+1) of them. Keys are hashed with 64-bit FNV-1a, mixed: the hash is
// part of the ring's contract and never changes between versions, so that
// replicas of different versions agree.
//
// A Ring is immutable and safe for concurrent use.
type Ring struct {
	members []string
	// slots[i] is the index in members of slot i's owner.
	slots []uint16
}

// maxRingMembers bounds the members of a ring: slot owners are uint16.
const maxRingMembers = 1 << 15

// NewRing returns the ring of these members (names, in any order; duplicates
// count once). A ring without members owns nothing.
func NewRing(members ...string) (*Ring, error) {
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	if len(ms) > 0 && ms[0] == "" {
		return nil, fmt.Errorf("leanstore: a ring member needs a name")
	}
	if len(ms) > maxRingMembers {
		return nil, fmt.Errorf("leanstore: a ring of %d members exceeds %d", len(ms), maxRingMembers)
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
			if score := shardMix(seed ^ (uint64(s)+1)*0x9e3779b97f4a7c15); i == 0 || score > bestScore {
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
func (r *Ring) Owner(namespace, name string, by ShardBy) string {
	if len(r.members) == 0 {
		return ""
	}
	return r.members[r.slots[slotOf(keyHashString(namespace, name, by))]]
}

// index returns the index of member m, or -1.
func (r *Ring) index(m string) int {
	i, ok := slices.BinarySearch(r.members, m)
	if !ok {
		return -1
	}
	return i
}

// ownerIndex is the index of the owner of the key with this hash; the ring
// must have members.
func (r *Ring) ownerIndex(h uint64) int { return int(r.slots[slotOf(h)]) }

func slotOf(h uint64) int { return int(h & (ringSlots - 1)) }

// FNV-1a, 64 bits.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// shardMix is splitmix64's finalizer: FNV's low bits, which pick the slot, depend
// weakly on a key's last bytes without it.
func shardMix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// keyHashString is the shard hash of an object key.
func keyHashString(namespace, name string, by ShardBy) uint64 {
	h := uint64(fnvOffset)
	switch {
	case by == ShardByNamespace && namespace != "":
		h = fnvString(h, namespace)
	case by == ShardByNamespace:
		h = fnvString(h, name)
	case namespace != "":
		h = fnvString(h, namespace)
		h = fnvString(h, "/")
		h = fnvString(h, name)
	default:
		h = fnvString(h, name)
	}
	return shardMix(h)
}

// keyHashBytesShard is keyHashString of a namespace and name read from
// encoded bytes; it does not allocate.
func keyHashBytesShard(namespace, name []byte, by ShardBy) uint64 {
	h := uint64(fnvOffset)
	switch {
	case by == ShardByNamespace && len(namespace) > 0:
		h = fnvBytes(h, namespace)
	case by == ShardByNamespace:
		h = fnvBytes(h, name)
	case len(namespace) > 0:
		h = fnvBytes(h, namespace)
		h ^= '/'
		h *= fnvPrime
		h = fnvBytes(h, name)
	default:
		h = fnvBytes(h, name)
	}
	return shardMix(h)
}
