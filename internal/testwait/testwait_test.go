package testwait

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeT records what For would fail the test with.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = format
	for _, a := range args {
		f.failed += " " + toString(a)
	}
}

func toString(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case time.Duration:
		return v.String()
	}
	return "?"
}

// TestForReturnsOnceTheConditionHolds: a condition another goroutine makes
// true is seen, and cond is not called again after it held.
func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	var flag, calls atomic.Int32
	go func() { flag.Store(1) }()
	For(t, 10*time.Second, "the flag", func() bool {
		calls.Add(1)
		return flag.Load() == 1
	})
	n := calls.Load()
	if n < 1 {
		t.Fatalf("cond called %d times", n)
	}
}

// TestForFailsSayingWhatItWaitedFor: a condition that never holds fails
// the test after the timeout, naming what was awaited.
func TestForFailsSayingWhatItWaitedFor(t *testing.T) {
	f := &fakeT{}
	start := time.Now()
	For(f, 30*time.Millisecond, "the moon", func() bool { return false })
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Fatalf("gave up after %s, before the 30ms timeout", took)
	}
	if !strings.Contains(f.failed, "the moon") || !strings.Contains(f.failed, "30ms") {
		t.Fatalf("failure %q does not say what was awaited and for how long", f.failed)
	}
}

// TestValueReturnsTheValueThatHeld: Value returns what f returned when it
// reported ok.
func TestValueReturnsTheValueThatHeld(t *testing.T) {
	var n int
	got := Value(t, 10*time.Second, "the third call", func() (int, bool) {
		n++
		return n * 10, n == 3
	})
	if got != 30 {
		t.Fatalf("Value = %d, want 30", got)
	}
}

// TestUntilReportsATimeout: Until returns false without failing anything.
func TestUntilReportsATimeout(t *testing.T) {
	if Until(5*time.Millisecond, func() bool { return false }) {
		t.Fatal("Until reported a condition that never held")
	}
	if !Until(5*time.Millisecond, func() bool { return true }) {
		t.Fatal("Until missed a condition that held at once")
	}
}
