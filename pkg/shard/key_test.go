package shard

import "testing"

// The hash of a key read from encoded bytes (lists and watches through the lean
// decoder) must equal that of the decoded key (the JSON paths, Ring.Owner),
// or two paths of one replica would disagree on an object's owner.
func TestKeyHashBytesMatchesString(t *testing.T) {
	cases := [][2]string{{"", ""}, {"", "node-1"}, {"ns", "a"}, {"ns/", "a"}, {"n", "s/a"}, {"kube-system", "coredns-5d78c9869d-abcde"}}
	cases = append(cases, ringKeys(200)...)
	for _, by := range []By{ByObject, ByNamespace} {
		for _, k := range cases {
			if s, b := KeyHash(k[0], k[1], by), KeyHashBytes([]byte(k[0]), []byte(k[1]), by); s != b {
				t.Errorf("by %s, key %q/%q: string hash %x, bytes hash %x", by, k[0], k[1], s, b)
			}
		}
	}
}
