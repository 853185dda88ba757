package runtime

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/argo-retry/argo/argotype"
)

// BackoffKind selects how the delay before the next attempt grows (argotype.BackoffKind).
type BackoffKind = argotype.BackoffKind

// The backoff kinds (see argotype.BackoffKind).
const (
	BackoffFixed       = argotype.BackoffFixed
	BackoffLinear      = argotype.BackoffLinear
	BackoffExponential = argotype.BackoffExponential
)

// JitterKind selects how a delay is randomised (argotype.JitterKind).
type JitterKind = argotype.JitterKind

// The jitter kinds (see argotype.JitterKind).
const (
	JitterNone     = argotype.JitterNone
	JitterFull     = argotype.JitterFull
	JitterEqual    = argotype.JitterEqual
	JitterRatio    = argotype.JitterRatio
	JitterAdditive = argotype.JitterAdditive
)

// Jitter randomises a backoff delay (argotype.Jitter).
type Jitter = argotype.Jitter

// ParseJitter reads the directive syntax: none, full, equal, "10%" (±10%),
// or "+300ms" (additive up to 300ms).
func ParseJitter(s string) (Jitter, error) { return argotype.ParseJitter(s) }

// Unlimited as MaxAttempts means retry until success (or an operator discard).
const Unlimited = argotype.Unlimited

// RetryPolicy says how often and when a failed task is tried again
// (argotype.RetryPolicy). It is stored with each task (column retry_policy,
// as JSON) so that any instance, including the lease rescuer, computes the
// same next time.
type RetryPolicy = argotype.RetryPolicy

// DefaultRetryPolicy is what a directive with no retry keys gets: 4 attempts
// (3 retries), exponential from 1s ×2 capped at 1m, ±10% jitter, no timeout.
func DefaultRetryPolicy() RetryPolicy { return argotype.DefaultRetryPolicy() }

// policyJSON is the stored form of a RetryPolicy (column retry_policy):
// durations as Go duration strings, readable by a DBA.
type policyJSON struct {
	MaxAttempts int         `json:"max_attempts"`
	Backoff     BackoffKind `json:"backoff"`
	Initial     string      `json:"initial"`
	Multiplier  float64     `json:"multiplier,omitempty"`
	MaxDelay    string      `json:"max_delay,omitempty"`
	Jitter      string      `json:"jitter"`
	Timeout     string      `json:"timeout,omitempty"`
}

func durString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// encodePolicy is the stored form of p (column retry_policy).
func encodePolicy(p RetryPolicy) string {
	b, _ := json.Marshal(policyJSON{MaxAttempts: p.MaxAttempts, Backoff: p.Backoff, Initial: p.Initial.String(), Multiplier: p.Multiplier,
		MaxDelay: durString(p.MaxDelay), Jitter: p.Jitter.String(), Timeout: durString(p.Timeout)})
	return string(b)
}

// decodePolicy reads a retry_policy column; its error says how to fix the row.
func decodePolicy(s string) (RetryPolicy, error) {
	var j policyJSON
	var p RetryPolicy
	bad := func(err error) (RetryPolicy, error) {
		return p, fmt.Errorf("retry_policy column %q does not decode (%v): fix it, or discard the task with argoctl", s, err)
	}
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return bad(err)
	}
	p.MaxAttempts, p.Backoff, p.Multiplier = j.MaxAttempts, j.Backoff, j.Multiplier
	for _, f := range []struct {
		in  string
		out *time.Duration
	}{{j.Initial, &p.Initial}, {j.MaxDelay, &p.MaxDelay}, {j.Timeout, &p.Timeout}} {
		if f.in == "" {
			continue
		}
		d, err := time.ParseDuration(f.in)
		if err != nil {
			return bad(err)
		}
		*f.out = d
	}
	jit, err := ParseJitter(j.Jitter)
	if err != nil {
		return bad(err)
	}
	p.Jitter = jit
	if err := p.Validate(); err != nil {
		return bad(err)
	}
	return p, nil
}
