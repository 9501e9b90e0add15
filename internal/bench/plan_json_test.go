package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestReadJSONRejectsOtherSchemas(t *testing.T) {
	if _, err := ReadJSON(strings.NewReader(`{"schema": 99}`)); err == nil || !strings.Contains(err.Error(), "schema 99") {
		t.Errorf("ReadJSON of schema 99: %v, want a schema error", err)
	}
	if _, err := ReadJSON(strings.NewReader(`{"schema": 2, "bogus": true}`)); err == nil {
		t.Error("ReadJSON accepted an unknown field")
	}
}

func TestPlanAndDurationJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, Report{Schema: ReportSchema, Plan: DefaultPlan()}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"settle": "500ms"`) || !strings.Contains(b.String(), `"sampleEvery": "2ms"`) {
		t.Errorf("durations are not written as Go durations:\n%s", b.String())
	}
	bad := DefaultPlan()
	bad.Relists = -1
	if bad.Validate() == nil {
		t.Error("a plan with -1 re-lists validated")
	}
}

func TestPlanChurnValidation(t *testing.T) {
	p := DefaultPlan()
	if err := p.Validate(); err != nil || p.ChurnAt(2) != 0.1 || p.ChurnAt(3) != 0 {
		t.Errorf("default plan: %v, churn at 2 %v", err, p.ChurnAt(2))
	}
	p.Churn = []float64{0, 0.1, 1}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "3 churn levels for 2 re-lists") {
		t.Errorf("3 levels for 2 re-lists: %v", err)
	}
	p.Relists, p.Churn = 1, []float64{1.5}
	if err := p.Validate(); err == nil {
		t.Error("a churn of 1.5 validated")
	}
}
