package runtime

import (
	"fmt"
	"math"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// RetryBudget bounds a flow group's retries by its first attempts, across
// every instance (the SRE retry budget; docs/flow-control.md): within each
// Window, the group's retries may start at most Share of the first attempts
// it started in that Window, plus MinRetries. A retry over the budget is
// not started: it stays due and waits, without using an attempt, until a
// new window or new first attempts make room. So when the downstream
// struggles, retries add at most Share to its load instead of multiplying
// it. The directive key is retry-budget=[GROUP:]P%/WINDOW.
type RetryBudget struct {
	// Share is the most retries per first attempt, between 0 and 1
	// exclusive of 0 (0.2: one retry per five first attempts).
	Share float64
	// Window is the span over which retries and first attempts are
	// counted; default DefaultRetryBudgetWindow.
	Window time.Duration
	// MinRetries are the retries each window allows beyond the share, so a
	// group whose new calls have stopped still retries, slowly; 0 means
	// DefaultRetryBudgetMinRetries.
	MinRetries int
}

// The retry budget's defaults.
const (
	DefaultRetryBudgetWindow     = time.Minute
	DefaultRetryBudgetMinRetries = 1
)

// validate reports what is wrong with b.
func (b *RetryBudget) validate() error {
	switch {
	case b == nil:
		return nil
	case !(b.Share > 0 && b.Share <= 1) || math.IsNaN(b.Share):
		return fmt.Errorf("retry budget: share %v is not above 0 and at most 1 (0.2: one retry per five first attempts)", b.Share)
	case b.Window < 0:
		return fmt.Errorf("retry budget: negative window %s", b.Window)
	case b.Window > 0 && b.Window < time.Millisecond:
		return fmt.Errorf("retry budget: window %s is shorter than a millisecond", b.Window)
	case b.MinRetries < 0:
		return fmt.Errorf("retry budget: negative MinRetries %d", b.MinRetries)
	}
	return nil
}

// policy is b with defaults, as the store applies it.
func (b *RetryBudget) policy() *storage.RetryBudgetPolicy {
	w, minRetries := b.Window, b.MinRetries
	if w == 0 {
		w = DefaultRetryBudgetWindow
	}
	if minRetries == 0 {
		minRetries = DefaultRetryBudgetMinRetries
	}
	return &storage.RetryBudgetPolicy{Share: b.Share, WindowMs: w.Milliseconds(), MinRetries: minRetries}
}
