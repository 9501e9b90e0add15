package shard

import "time"

// Version is one version of a Membership's ring, as its member sees it. A
// membership publishes a new Version whenever its members change, and closes
// the old one's Changed channel, so that whoever holds a Version can wait for
// the next without registering anywhere.
//
// A Version is immutable and safe for concurrent use.
type Version struct {
	// ring is nil until the membership is ready (a Lease membership: its own
	// Lease held, the others listed).
	ring *Ring
	gen  uint64
	// self is the member's index in ring, -1 when it is not a member (its
	// Lease could not be renewed in time): it then owns nothing.
	self    int
	changed chan struct{}
	at      time.Time
}

// newVersion returns the version of ring (nil: not ready) that follows
// generation prev, as member self sees it.
func newVersion(ring *Ring, prev uint64, self string) *Version {
	v := &Version{ring: ring, gen: prev + 1, self: -1, changed: make(chan struct{}), at: time.Now()}
	if ring != nil {
		v.self = ring.Index(self)
	}
	return v
}

// Ring is the version's ring, nil while the membership is not ready.
func (v *Version) Ring() *Ring { return v.ring }

// Generation counts the versions the membership has published; 0 is the one
// before it was ready.
func (v *Version) Generation() uint64 { return v.gen }

// Member reports whether the membership's own member is in the ring: false
// while it is not ready, and while its Lease could not be renewed in time.
// A member outside the ring owns nothing.
func (v *Version) Member() bool { return v.ring != nil && v.self >= 0 }

// Members returns the ring's members, sorted; nil while not ready.
func (v *Version) Members() []string {
	if v == nil || v.ring == nil {
		return nil
	}
	return v.ring.Members()
}

// Changed is closed when the membership publishes the next version.
func (v *Version) Changed() <-chan struct{} { return v.changed }

// ChangedAt is when the version was published.
func (v *Version) ChangedAt() time.Time { return v.at }

// Owns reports whether the member owns the object with this namespace and
// name in this version.
func (v *Version) Owns(namespace, name string, by By) bool {
	return v.OwnsHash(KeyHash(namespace, name, by))
}

// OwnsHash reports whether the member owns the key with this hash (KeyHash or
// KeyHashBytes) in this version. It does not allocate: a decoder may call it
// for every object of every list and watch.
func (v *Version) OwnsHash(keyHash uint64) bool {
	return v.self >= 0 && v.ring.OwnerIndex(keyHash) == v.self
}

// SameShare reports whether the member owns the same keys in v and o: a
// change of the ring that moves nothing to or from it (another member's
// Lease renewed under a new name, say) needs no re-list of its objects.
func (v *Version) SameShare(o *Version) bool {
	switch {
	case v == o:
		return true
	case v == nil || o == nil || v.ring == nil || o.ring == nil || (v.self < 0) != (o.self < 0):
		return false
	case v.self < 0:
		return true // owned nothing, owns nothing
	}
	return v.ring.sameShare(v.self, o.ring, o.self)
}
