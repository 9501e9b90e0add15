// Package assert is the small part of github.com/stretchr/testify/assert that
// client-go's informer tests use, so that package informer runs them with
// their assertions as written (see ../../upstream_shared_informer_test.go)
// without the module depending on testify. Each function reports a failure
// with t.Errorf and returns whether the assertion held, as testify's does.
package assert

import (
	"bytes"
	"cmp"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// TestingT is what an assertion reports to: a *testing.T, or a *CollectT.
type TestingT interface {
	Errorf(format string, args ...any)
}

type helper interface{ Helper() }

func fail(t TestingT, msg string, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if extra := message(msgAndArgs...); extra != "" {
		msg += ": " + extra
	}
	t.Errorf("%s", msg)
	return false
}

func message(msgAndArgs ...any) string {
	if len(msgAndArgs) == 0 {
		return ""
	}
	f, ok := msgAndArgs[0].(string)
	if !ok {
		return fmt.Sprintf("%+v", msgAndArgs[0])
	}
	if len(msgAndArgs) == 1 {
		return f
	}
	return fmt.Sprintf(f, msgAndArgs[1:]...)
}

// ObjectsAreEqual is testify's: bytes.Equal for byte slices, else
// reflect.DeepEqual.
func ObjectsAreEqual(expected, actual any) bool {
	if e, ok := expected.([]byte); ok {
		if a, ok := actual.([]byte); ok {
			return bytes.Equal(e, a)
		}
	}
	return reflect.DeepEqual(expected, actual)
}

// Equal asserts that expected and actual are equal (ObjectsAreEqual).
func Equal(t TestingT, expected, actual any, msgAndArgs ...any) bool {
	if ObjectsAreEqual(expected, actual) {
		return true
	}
	return fail(t, fmt.Sprintf("not equal:\nexpected: %#v\nactual  : %#v", expected, actual), msgAndArgs...)
}

// NoError asserts that err is nil.
func NoError(t TestingT, err error, msgAndArgs ...any) bool {
	if err == nil {
		return true
	}
	return fail(t, fmt.Sprintf("unexpected error: %v", err), msgAndArgs...)
}

// True asserts that value is true.
func True(t TestingT, value bool, msgAndArgs ...any) bool {
	if value {
		return true
	}
	return fail(t, "should be true", msgAndArgs...)
}

// False asserts that value is false.
func False(t TestingT, value bool, msgAndArgs ...any) bool {
	if !value {
		return true
	}
	return fail(t, "should be false", msgAndArgs...)
}

// Len asserts that object (a string, slice, map, array or channel) has
// length n.
func Len(t TestingT, object any, n int, msgAndArgs ...any) bool {
	v := reflect.ValueOf(object)
	switch v.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Array, reflect.Chan:
		if v.Len() == n {
			return true
		}
		return fail(t, fmt.Sprintf("%#v should have %d item(s), but has %d", object, n, v.Len()), msgAndArgs...)
	}
	return fail(t, fmt.Sprintf("%#v has no length", object), msgAndArgs...)
}

// Contains asserts that s (a string, slice or array) contains element (a
// substring, or an element equal to it).
func Contains(t TestingT, s, element any, msgAndArgs ...any) bool {
	if str, ok := s.(string); ok {
		if sub, ok := element.(string); ok && strings.Contains(str, sub) {
			return true
		}
		return fail(t, fmt.Sprintf("%q does not contain %#v", str, element), msgAndArgs...)
	}
	v := reflect.ValueOf(s)
	if v.Kind() == reflect.Slice || v.Kind() == reflect.Array {
		for i := range v.Len() {
			if ObjectsAreEqual(v.Index(i).Interface(), element) {
				return true
			}
		}
	}
	return fail(t, fmt.Sprintf("%#v does not contain %#v", s, element), msgAndArgs...)
}

// GreaterOrEqual asserts that e1 >= e2.
func GreaterOrEqual[T cmp.Ordered](t TestingT, e1, e2 T, msgAndArgs ...any) bool {
	if e1 >= e2 {
		return true
	}
	return fail(t, fmt.Sprintf("%v is not greater than or equal to %v", e1, e2), msgAndArgs...)
}

// Eventually asserts that condition returns true within waitFor, checking
// every tick.
func Eventually(t TestingT, condition func() bool, waitFor, tick time.Duration, msgAndArgs ...any) bool {
	deadline := time.Now().Add(waitFor)
	for {
		if condition() {
			return true
		}
		if time.Now().After(deadline) {
			return fail(t, "condition never satisfied", msgAndArgs...)
		}
		time.Sleep(tick)
	}
}

// CollectT collects the failures of one try of EventuallyWithT.
type CollectT struct {
	errors []string
}

// Errorf records a failure.
func (c *CollectT) Errorf(format string, args ...any) {
	c.errors = append(c.errors, fmt.Sprintf(format, args...))
}

// EventuallyWithT asserts that condition reports no failure to its CollectT
// within waitFor, trying every tick; it reports the last try's failures.
func EventuallyWithT(t TestingT, condition func(collect *CollectT), waitFor, tick time.Duration, msgAndArgs ...any) bool {
	deadline := time.Now().Add(waitFor)
	for {
		c := &CollectT{}
		condition(c)
		if len(c.errors) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return fail(t, "condition never satisfied; last failures:\n"+strings.Join(c.errors, "\n"), msgAndArgs...)
		}
		time.Sleep(tick)
	}
}

// Assertions are the assertions bound to one t (testify's assert.New).
type Assertions struct{ t TestingT }

// New binds the assertions to t.
func New(t TestingT) *Assertions { return &Assertions{t} }

// NoError is the package's NoError.
func (a *Assertions) NoError(err error, msgAndArgs ...any) bool {
	return NoError(a.t, err, msgAndArgs...)
}

// Eventually is the package's Eventually.
func (a *Assertions) Eventually(condition func() bool, waitFor, tick time.Duration, msgAndArgs ...any) bool {
	return Eventually(a.t, condition, waitFor, tick, msgAndArgs...)
}
