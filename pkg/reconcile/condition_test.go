package reconcile

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSetCondition(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	ready := map[string]any{
		"type": "Ready", "status": "True", "reason": "Assembled", "message": "",
		"lastTransitionTime": "2026-11-01T10:00:00Z",
	}
	other := map[string]any{"type": "Other", "status": "True"}
	cases := []struct {
		name        string
		conds       []any
		set         metav1.Condition
		wantChanged bool
		want        []any
	}{
		{
			name:        "added to an empty status",
			set:         metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Assembled", LastTransitionTime: t0},
			wantChanged: true,
			want:        []any{ready},
		},
		{
			name:  "same condition again: no change, no new timestamp",
			conds: []any{other, ready},
			set:   metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Assembled", LastTransitionTime: t1},
			want:  []any{other, ready},
		},
		{
			name:        "status flips: new transition time, other conditions kept",
			conds:       []any{other, ready},
			set:         metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "InvalidSpec", Message: "spec.size must be positive", ObservedGeneration: 3, LastTransitionTime: t1},
			wantChanged: true,
			want: []any{other, map[string]any{
				"type": "Ready", "status": "False", "reason": "InvalidSpec", "message": "spec.size must be positive",
				"observedGeneration": int64(3), "lastTransitionTime": "2026-11-02T10:00:00Z",
			}},
		},
		{
			name:        "same status, new reason: transition time kept",
			conds:       []any{ready},
			set:         metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Repaired", LastTransitionTime: t1},
			wantChanged: true,
			want: []any{map[string]any{
				"type": "Ready", "status": "True", "reason": "Repaired", "message": "",
				"lastTransitionTime": "2026-11-01T10:00:00Z",
			}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"kind": "Widget"}}
			if c.conds != nil {
				if err := unstructured.SetNestedSlice(u.Object, c.conds, "status", "conditions"); err != nil {
					t.Fatal(err)
				}
			}
			if got := SetCondition(u, c.set); got != c.wantChanged {
				t.Errorf("changed = %v, want %v", got, c.wantChanged)
			}
			got, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}
