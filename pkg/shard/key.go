package shard

// The key hash is part of the ring's contract and never changes between
// versions, so that replicas of different versions agree on every owner: 64-bit
// FNV-1a of the key, then splitmix64's finalizer, because FNV's low bits, which
// pick the slot, depend weakly on a key's last bytes without it.

// FNV-1a, 64 bits.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// KeyHash is the hash of the object with this namespace and name ("" for a
// cluster-scoped object) that decides its owner (Ring.OwnerIndex,
// Version.OwnsHash).
func KeyHash(namespace, name string, by By) uint64 {
	h := uint64(fnvOffset)
	switch {
	case by == ByNamespace && namespace != "":
		h = fnvString(h, namespace)
	case by == ByNamespace:
		h = fnvString(h, name)
	case namespace != "":
		h = fnvString(h, namespace)
		h = fnvString(h, "/")
		h = fnvString(h, name)
	default:
		h = fnvString(h, name)
	}
	return mix(h)
}

// KeyHashBytes is KeyHash of a namespace and name read from encoded bytes,
// equal to KeyHash of the same strings; it does not allocate, so that a
// decoder can drop another member's object before decoding it.
func KeyHashBytes(namespace, name []byte, by By) uint64 {
	h := uint64(fnvOffset)
	switch {
	case by == ByNamespace && len(namespace) > 0:
		h = fnvBytes(h, namespace)
	case by == ByNamespace:
		h = fnvBytes(h, name)
	case len(namespace) > 0:
		h = fnvBytes(h, namespace)
		h ^= '/'
		h *= fnvPrime
		h = fnvBytes(h, name)
	default:
		h = fnvBytes(h, name)
	}
	return mix(h)
}

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

// mix is splitmix64's finalizer.
func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
