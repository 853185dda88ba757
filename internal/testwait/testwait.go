// Package testwait is the tests' one wait-for-condition helper: poll a
// condition until it holds, and fail the test, saying what was awaited,
// when it does not hold by a deadline.
//
// Tests use it instead of a fixed time.Sleep that stands in for a
// condition (a sleep is either too short under load, and the test flakes,
// or too long, and the suite is slow) and instead of writing their own
// polling loop. It uses the standard library only and is imported by
// _test.go files only.
//
// The condition is polled first at once, then after 1 ms, the interval
// doubling up to MaxPoll (16 ms): a condition that holds quickly is seen
// quickly, and one that takes seconds (a database round trip under -race)
// is not polled hard.
package testwait

import (
	"testing"
	"time"
)

// MaxPoll is the longest interval between two checks of a condition.
const MaxPoll = 16 * time.Millisecond

// For polls cond until it returns true, and fails t with
// "waited <timeout> for <what>" (t.Fatalf) if it has not by the time timeout
// has passed since the call. cond runs on the caller's goroutine, so it may
// itself call t.Fatal.
func For(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(timeout, cond) {
		t.Fatalf("waited %s for %s", timeout, what)
	}
}

// Until polls cond until it returns true or timeout has passed since the
// call, and reports whether it held. It is For for a caller that does
// something other than failing when the condition never holds.
func Until(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	poll := time.Millisecond
	for !cond() {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(poll, left))
		poll = min(2*poll, MaxPoll)
	}
	return true
}

// Value polls f until it reports ok, and returns the value it returned
// then; it fails t as For does when f has not reported ok by timeout.
func Value[T any](t testing.TB, timeout time.Duration, what string, f func() (T, bool)) T {
	t.Helper()
	var v T
	For(t, timeout, what, func() bool {
		var ok bool
		v, ok = f()
		return ok
	})
	return v
}
