package reconcile

import "testing"

func TestTriggerString(t *testing.T) {
	cases := []struct {
		t    Trigger
		want string
	}{
		{0, "none"},
		{ObjectChanged, "object-changed"},
		{ObjectChanged | Retry, "object-changed+retry"},
		{Resync | RelatedChanged | Enqueued, "related-changed+resync+enqueued"},
		{Requeued, "requeued"},
	}
	for _, c := range cases {
		if got := c.t.String(); got != c.want {
			t.Errorf("%08b.String() = %q, want %q", c.t, got, c.want)
		}
	}
	if !(ObjectChanged | Retry).Has(Retry) || (ObjectChanged).Has(Retry) || ObjectChanged.Has(0) {
		t.Error("Has gives wrong answers")
	}
}
