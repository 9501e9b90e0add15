package diagnose

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func entry(manager string, sec int64, fields string) metav1.ManagedFieldsEntry {
	e := metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
		Time: &metav1.Time{Time: time.Unix(1700000000+sec, 0)}}
	if fields != "" {
		e.FieldsV1 = metav1.NewFieldsV1(fields)
	}
	return e
}

const (
	ownsX     = `{"f:metadata":{"f:annotations":{"f:x":{}}}}`
	ownsXY    = `{"f:metadata":{"f:annotations":{"f:x":{},"f:y":{}}}}`
	ownsY     = `{"f:metadata":{"f:annotations":{"f:y":{}}}}`
	ownsSpec  = `{"f:spec":{"f:size":{}}}`
	ownsSpecX = `{"f:metadata":{"f:annotations":{"f:x":{}}},"f:spec":{"f:size":{}}}`
)

func TestTurnOf(t *testing.T) {
	tests := []struct {
		name     string
		old, new []metav1.ManagedFieldsEntry
		want     turn
	}{
		{"stripped", nil, nil, turn{}},
		{"new manager", []metav1.ManagedFieldsEntry{entry("a", 0, ownsSpec)},
			[]metav1.ManagedFieldsEntry{entry("a", 0, ownsSpec), entry("b", 5, ownsY)}, turn{writers: []string{"b"}}},
		{"time advanced, same fields", []metav1.ManagedFieldsEntry{entry("a", 0, ownsX)},
			[]metav1.ManagedFieldsEntry{entry("a", 1, ownsX)}, turn{writers: []string{"a"}}},
		{"same second, no new field: unknown", []metav1.ManagedFieldsEntry{entry("a", 0, ownsX)},
			[]metav1.ManagedFieldsEntry{entry("a", 0, ownsX)}, turn{}},
		{"takeover, loser's entry gone", []metav1.ManagedFieldsEntry{entry("a", 0, ownsSpec), entry("b", 0, ownsX)},
			[]metav1.ManagedFieldsEntry{entry("a", 0, ownsSpecX)}, turn{writers: []string{"a"}, took: "a", from: "b"}},
		{"takeover within the second", []metav1.ManagedFieldsEntry{entry("a", 0, ownsY), entry("b", 0, ownsX)},
			[]metav1.ManagedFieldsEntry{entry("a", 0, ownsXY)}, turn{writers: []string{"a"}, took: "a", from: "b"}},
		{"takeover, loser keeps other fields", []metav1.ManagedFieldsEntry{entry("a", 0, ownsSpec), entry("b", 0, ownsXY)},
			[]metav1.ManagedFieldsEntry{entry("a", 3, ownsSpecX), entry("b", 0, ownsY)}, turn{writers: []string{"a"}, took: "a", from: "b"}},
		{"field dropped, nobody took it", []metav1.ManagedFieldsEntry{entry("a", 0, ownsXY)},
			[]metav1.ManagedFieldsEntry{entry("a", 2, ownsY)}, turn{writers: []string{"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, turnOf(tt.old, tt.new), cmp.AllowUnexported(turn{})); diff != "" {
				t.Errorf("turn (-want +got):\n%s", diff)
			}
		})
	}
}
