package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// An option out of range is the constructor's error, naming the option; it
// is never adjusted to the nearest valid value.
func TestInvalidOptionsAreErrors(t *testing.T) {
	churn := []struct {
		opt  ChurnOption
		want string
	}{
		{WithWindow(0), "WithWindow"},
		{WithLoopThreshold(1), "WithLoopThreshold"},
		{WithPingPongTurns(1), "WithPingPongTurns"},
		{WithHistory(10), "WithHistory"}, // less than the default loop threshold, 20
		{WithForgetAfter(-time.Second), "WithForgetAfter"},
		{WithMaxObjects(0), "WithMaxObjects"},
		{WithRetention(-time.Second), "WithRetention"},
		{WithMaxFindings(0), "WithMaxFindings"},
		{WithClock(nil), "WithClock"},
	}
	for _, c := range churn {
		if d, err := NewChurnDetector(c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewChurnDetector(%s) = %v, %v; want an error naming %s", c.want, d, err, c.want)
		}
	}
	stuck := []struct {
		opt  StuckOption
		want string
	}{
		{WithThreshold(-time.Second), "WithThreshold"},
		{WithMaxFindings(0), "WithMaxFindings"},
	}
	for _, c := range stuck {
		if s, err := NewStuckDetector(c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewStuckDetector(%s) = %v, %v; want an error naming %s", c.want, s, err, c.want)
		}
	}
	if _, err := NewChurnDetector(WithHistory(20), WithLoopThreshold(20)); err != nil {
		t.Errorf("a history of exactly the loop threshold: %v", err)
	}
}

// Two detectors of one resource on one registry collide: the second
// constructor says so.
func TestMetricsRegistrationFailureIsAnError(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if _, err := NewStuckDetector(WithResource("pods"), WithMetrics(reg)); err != nil {
		t.Fatal(err)
	}
	if _, err := NewStuckDetector(WithResource("pods"), WithMetrics(reg)); err == nil || !strings.Contains(err.Error(), "WithMetrics") {
		t.Errorf("second detector on one registry: err = %v, want the WithMetrics error", err)
	}
}
