package failure_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/cachetune/cachetune/pkg/failure"
)

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want time.Duration
		ok   bool
	}{
		{"429 with details", apierrors.NewTooManyRequests("x", 3), 3 * time.Second, true},
		{"wrapped 503", fmt.Errorf("get: %w", apierrors.NewGenericServerResponse(503, "GET", pods, "", "", 5, true)), 5 * time.Second, true},
		{"504 with details", apierrors.NewTimeoutError("x", 2), 2 * time.Second, true},
		{"429 without", apierrors.NewTooManyRequests("x", 0), 0, false},
		{"typed error", &failure.Error{Reason: failure.TooManyRequests, RetryAfter: 1500 * time.Millisecond}, 1500 * time.Millisecond, true},
		{"plain", errors.New("x"), 0, false},
		{"nil", nil, 0, false},
	}
	for _, tt := range tests {
		got, ok := failure.RetryAfter(tt.err)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: RetryAfter = %s %v, want %s %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"3", 3 * time.Second, true},
		{" 0 ", 0, true},
		{"Sun, 01 Mar 2026 12:00:07 GMT", 7 * time.Second, true},
		{"Sunday, 01-Mar-26 12:00:07 GMT", 7 * time.Second, true}, // RFC 850, still valid
		{"Sun, 01 Mar 2026 11:59:00 GMT", 0, true},                // in the past: now
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := failure.ParseRetryAfter(tt.value, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%q) = %s %v, want %s %v", tt.value, got, ok, tt.want, tt.ok)
		}
	}
}
