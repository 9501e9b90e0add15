package shrink

import "hash/maphash"

// The content hash that interning, sharing and the mutation guard compare
// values by: maphash for strings and bytes with the process's seed, mixed
// with the hashes of a value's parts.

var shareSeed = maphash.MakeSeed()

func mix(a, b uint64) uint64 {
	a ^= b + 0x9e3779b97f4a7c15 + (a << 6) + (a >> 2)
	a *= 0xbf58476d1ce4e5b9
	return a ^ (a >> 31)
}
