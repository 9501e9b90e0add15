package bench

import (
	"slices"
	"testing"
)

// TestTurnsAlternateTheOrder checks the order of a run of rounds: every job
// once per round, in order in odd rounds and in reverse in even ones.
func TestTurnsAlternateTheOrder(t *testing.T) {
	got := turns(3, 3)
	want := []turn{{1, 0}, {1, 1}, {1, 2}, {2, 2}, {2, 1}, {2, 0}, {3, 0}, {3, 1}, {3, 2}}
	if !slices.Equal(got, want) {
		t.Errorf("turns(3, 3) = %v, want %v", got, want)
	}
	if got := turns(2, 1); !slices.Equal(got, []turn{{1, 0}, {1, 1}}) {
		t.Errorf("turns(2, 1) = %v, want one round in order", got)
	}
	if roundOf(1, 1) != 0 || roundOf(2, 3) != 2 {
		t.Errorf("roundOf: a run of one round must leave Result.Round 0, a run of several number them")
	}
}
