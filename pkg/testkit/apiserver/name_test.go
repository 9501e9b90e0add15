package apiserver

import (
	"strings"
	"testing"
)

func TestNamespaceName(t *testing.T) {
	tests := []struct {
		test string
		seq  int64
		want string
	}{
		{"TestFoo", 1, "testfoo-1"},
		{"TestFoo/sub_case#01", 12, "testfoo-sub-case-01-12"},
		{strings.Repeat("A", 80), 3, strings.Repeat("a", 61) + "-3"},
	}
	for _, tt := range tests {
		if got := namespaceName(tt.test, tt.seq); got != tt.want {
			t.Errorf("namespaceName(%q, %d) = %q, want %q", tt.test, tt.seq, got, tt.want)
		}
		if len(namespaceName(tt.test, tt.seq)) > 63 {
			t.Errorf("namespaceName(%q) longer than 63", tt.test)
		}
	}
}
