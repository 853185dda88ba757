package mysqldriver

import (
	"errors"
	"fmt"
	"testing"

	"github.com/argo-retry/argo/internal/failover"
)

// TestNoServerOutcomeKnown: a write refused because no listed server was
// usable (failover.NoServerError: every one down, read-only or replaced)
// was never sent, whatever the servers' own errors were (none, for a
// replaced server).
func TestNoServerOutcomeKnown(t *testing.T) {
	ns := &failover.NoServerError{Servers: []string{"a:3306", "b:3306"}, Reasons: []string{"replaced by b:3306", "read-only (read_only=ON)"}, Errs: []error{nil, errors.New("read-only (read_only=ON)")}}
	for _, err := range []error{ns, fmt.Errorf("submit: %w", ns)} {
		if !(&Driver{}).OutcomeKnown(err) {
			t.Errorf("OutcomeKnown(%v) = false, want true: nothing was sent", err)
		}
	}
	if (&Driver{}).OutcomeKnown(errors.New("read-only (read_only=ON)")) {
		t.Errorf("OutcomeKnown of a bare error = true")
	}
}
