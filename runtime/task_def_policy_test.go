package runtime

import (
	"strings"
	"testing"
)

// A RetryPolicy with MaxAttempts but no Backoff was stored as argo's
// default (4 attempts): a task meant to run once ran four times. It is now
// refused, saying what to set; an empty Policy still means the default.
func TestTaskDefPolicyWithoutBackoffRefused(t *testing.T) {
	d := TaskDef{Name: "charge", Policy: RetryPolicy{MaxAttempts: 1}}
	err := d.Validate()
	if err == nil {
		t.Fatalf("Validate accepted a policy with MaxAttempts 1 and no Backoff (stored as %d attempts)", d.policy().MaxAttempts)
	}
	for _, want := range []string{"charge", "no Backoff", "BackoffFixed", "DefaultRetryPolicy"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	empty := TaskDef{Name: "charge"}
	if err := empty.Validate(); err != nil {
		t.Fatalf("an empty Policy is argo's default, got %v", err)
	}
	if got := empty.policy(); got != DefaultRetryPolicy() {
		t.Fatalf("empty Policy stored as %+v, want the default", got)
	}
	fixed := TaskDef{Name: "charge", Policy: RetryPolicy{MaxAttempts: 1, Backoff: BackoffFixed}}
	if err := fixed.Validate(); err != nil || fixed.policy().MaxAttempts != 1 {
		t.Fatalf("a full policy: err %v, attempts %d", err, fixed.policy().MaxAttempts)
	}
}
