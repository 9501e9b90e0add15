// Package require is the small part of github.com/stretchr/testify/require
// that client-go's informer tests use: package assert's assertions, ending
// the test when one fails.
package require

import (
	"time"

	"github.com/cachetune/cachetune/internal/informer/internal/assert"
)

// TestingT is what an assertion reports to.
type TestingT interface {
	Errorf(format string, args ...any)
	FailNow()
}

type helper interface{ Helper() }

// NoError asserts that err is nil, and ends the test if not.
func NoError(t TestingT, err error, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.NoError(t, err, msgAndArgs...) {
		t.FailNow()
	}
}

// Eventually asserts that condition returns true within waitFor, checking
// every tick, and ends the test if not.
func Eventually(t TestingT, condition func() bool, waitFor, tick time.Duration, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.Eventually(t, condition, waitFor, tick, msgAndArgs...) {
		t.FailNow()
	}
}
