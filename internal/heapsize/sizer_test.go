package heapsize

import (
	"strings"
	"testing"
)

type holder struct{ S string } // 16 bytes inline, with a pointer

type twice struct{ A, B *[64]byte }

func TestPerObject(t *testing.T) {
	shared := strings.Repeat("s", 100)
	sameArray := new([64]byte)
	for _, tc := range []struct {
		name    string
		objects []any
		n       int
		want    float64
	}{
		{"nothing sampled", nil, 10, 0},
		// Each holder is a 16-byte allocation, each string of 100 bytes one of
		// 112 (Go's size class).
		{"own strings", []any{&holder{strings.Repeat("a", 100)}, &holder{strings.Repeat("b", 100)}}, 1000, 16 + 112},
		// One string held by both: counted once for the whole store.
		{"a shared string", []any{&holder{shared}, &holder{shared}}, 1000, 16 + 112.0/1000},
		// A store smaller than the sample still holds the shared string once.
		{"a shared string, tiny store", []any{&holder{shared}, &holder{shared}}, 1, 16 + 112.0/2},
		// Two pointers of one object to one allocation: counted once.
		{"one allocation reached twice", []any{&twice{sameArray, sameArray}}, 1000, 16 + 64},
		// Short strings come from the tiny allocator: their own length.
		{"a short string", []any{&holder{strings.Repeat("x", 5)}}, 1, 16 + 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSizer()
			for _, o := range tc.objects {
				s.Object(o)
			}
			if got := s.PerObject(tc.n); got != tc.want {
				t.Errorf("PerObject(%d) = %v, want %v", tc.n, got, tc.want)
			}
		})
	}
}

func TestRoundAlloc(t *testing.T) {
	for _, tc := range []struct {
		n        uintptr
		pointers bool
		want     int64
	}{
		{0, false, 0},
		{5, false, 5}, // tiny allocator, no pointers
		{5, true, 8},
		{17, false, 24},
		{100, false, 112},
		{32768, false, 32768},
		{33000, false, 40960}, // large: whole 8 KB pages
	} {
		if got := roundAlloc(tc.n, tc.pointers); got != tc.want {
			t.Errorf("roundAlloc(%d, %v) = %d, want %d", tc.n, tc.pointers, got, tc.want)
		}
	}
}

func TestMapCounted(t *testing.T) {
	s := NewSizer()
	s.Object(&struct{ M map[string]string }{M: map[string]string{"k": strings.Repeat("v", 100)}})
	// The struct (8 bytes), the map's header and one group, and the value
	// string (112); the key "k" is one byte from the tiny allocator.
	got := s.PerObject(1)
	floor := float64(8 + 112 + 1)
	if got <= floor {
		t.Errorf("PerObject = %v, want more than %v: the map's own allocation counts", got, floor)
	}
}
