package argotype

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// BackoffKind selects how the delay before the next attempt grows.
type BackoffKind string

const (
	// BackoffFixed waits Initial before every retry.
	BackoffFixed BackoffKind = "fixed"
	// BackoffLinear waits n×Initial before retry n (the Java Argo starter's (n+1)×interval).
	BackoffLinear BackoffKind = "linear"
	// BackoffExponential waits Initial×Multiplier^(n-1) before retry n.
	BackoffExponential BackoffKind = "exponential"
)

// JitterKind selects how a delay is randomised. All jitter is deterministic:
// it is drawn from a hash of (task id, attempt), so replaying a task gives the
// same schedule.
type JitterKind string

const (
	JitterNone     JitterKind = "none"     // the computed delay exactly
	JitterFull     JitterKind = "full"     // uniform in [0, d]
	JitterEqual    JitterKind = "equal"    // d/2 + uniform in [0, d/2]
	JitterRatio    JitterKind = "ratio"    // d × (1 ± Ratio), e.g. ±10%
	JitterAdditive JitterKind = "additive" // d + uniform in [0, Max], e.g. +300ms
)

// Jitter randomises a backoff delay.
type Jitter struct {
	Kind  JitterKind    `json:"kind,omitempty"`
	Ratio float64       `json:"ratio,omitempty"` // for JitterRatio: 0.1 means ±10%
	Max   time.Duration `json:"max,omitempty"`   // for JitterAdditive
}

// ParseJitter reads the directive syntax: none, full, equal, "10%" (±10%),
// or "+300ms" (additive up to 300ms).
func ParseJitter(s string) (Jitter, error) {
	switch s {
	case "", "none":
		return Jitter{Kind: JitterNone}, nil
	case "full":
		return Jitter{Kind: JitterFull}, nil
	case "equal":
		return Jitter{Kind: JitterEqual}, nil
	}
	if strings.HasSuffix(s, "%") {
		f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
		if err != nil || f <= 0 || f >= 100 {
			return Jitter{}, fmt.Errorf("jitter %q: a ratio must be a number between 0 and 100 followed by %%, like 10%%", s)
		}
		return Jitter{Kind: JitterRatio, Ratio: f / 100}, nil
	}
	if strings.HasPrefix(s, "+") {
		d, err := time.ParseDuration(s[1:])
		if err != nil || d <= 0 {
			return Jitter{}, fmt.Errorf("jitter %q: an additive jitter is + and a positive duration, like +300ms", s)
		}
		return Jitter{Kind: JitterAdditive, Max: d}, nil
	}
	return Jitter{}, fmt.Errorf("jitter %q: want none, full, equal, a ratio like 10%%, or an additive duration like +300ms", s)
}

// String is the inverse of ParseJitter.
func (j Jitter) String() string {
	switch j.Kind {
	case JitterRatio:
		return strconv.FormatFloat(j.Ratio*100, 'f', -1, 64) + "%"
	case JitterAdditive:
		return "+" + j.Max.String()
	case "":
		return "none"
	}
	return string(j.Kind)
}

// Unlimited as MaxAttempts means retry until success (or an operator discard).
const Unlimited = 0

// RetryPolicy says how often and when a failed task is tried again. It is
// stored with each task (column retry_policy, as JSON) so that any instance,
// including the lease rescuer, computes the same next time.
//
// MaxAttempts counts attempts, the first included: MaxAttempts 4 means the
// first attempt and 3 retries (the directive's retries=3). 0 is unlimited.
type RetryPolicy struct {
	MaxAttempts int           `json:"max_attempts"`
	Backoff     BackoffKind   `json:"backoff"`
	Initial     time.Duration `json:"initial"`              // delay before the first retry; default 1s
	Multiplier  float64       `json:"multiplier,omitempty"` // exponential growth; default 2
	MaxDelay    time.Duration `json:"max_delay,omitempty"`  // cap on one delay before jitter; 0 is no cap
	Jitter      Jitter        `json:"jitter"`
	Timeout     time.Duration `json:"timeout,omitempty"` // per-attempt deadline; 0 is none
}

// DefaultRetryPolicy is what a directive with no retry keys gets: 4 attempts
// (3 retries), exponential from 1s ×2 capped at 1m, ±10% jitter, no timeout.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 4, Backoff: BackoffExponential, Initial: time.Second, Multiplier: 2, MaxDelay: time.Minute, Jitter: Jitter{Kind: JitterRatio, Ratio: 0.1}}
}

// Validate reports the first nonsensical field.
func (p RetryPolicy) Validate() error {
	switch p.Backoff {
	case BackoffFixed, BackoffLinear, BackoffExponential:
	default:
		return fmt.Errorf("retry policy: backoff %q: want fixed, linear or exponential", p.Backoff)
	}
	if p.MaxAttempts < 0 {
		return fmt.Errorf("retry policy: max attempts %d is negative (0 means unlimited)", p.MaxAttempts)
	}
	if p.Initial < 0 || p.MaxDelay < 0 || p.Timeout < 0 {
		return fmt.Errorf("retry policy: delays and timeout must not be negative")
	}
	if p.Backoff == BackoffExponential && p.Multiplier != 0 && p.Multiplier < 1 {
		return fmt.Errorf("retry policy: multiplier %v must be at least 1", p.Multiplier)
	}
	switch p.Jitter.Kind {
	case "", JitterNone, JitterFull, JitterEqual:
	case JitterRatio:
		if p.Jitter.Ratio <= 0 || p.Jitter.Ratio >= 1 {
			return fmt.Errorf("retry policy: jitter ratio %v must be in (0, 1)", p.Jitter.Ratio)
		}
	case JitterAdditive:
		if p.Jitter.Max <= 0 {
			return fmt.Errorf("retry policy: additive jitter needs a positive Max")
		}
	default:
		return fmt.Errorf("retry policy: jitter kind %q unknown", p.Jitter.Kind)
	}
	return nil
}

// Exhausted reports whether no attempt is left after attempt number attempt (1-based).
func (p RetryPolicy) Exhausted(attempt int) bool {
	return p.MaxAttempts != Unlimited && attempt >= p.MaxAttempts
}

// Delay returns the wait after failed attempt number attempt (1-based)
// before the next one, for task taskID. It is a pure function: the same
// policy, task and attempt always give the same delay.
func (p RetryPolicy) Delay(taskID int64, attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	base := float64(p.Initial)
	switch p.Backoff {
	case BackoffLinear:
		base *= float64(attempt)
	case BackoffExponential:
		m := p.Multiplier
		if m == 0 {
			m = 2
		}
		base *= math.Pow(m, float64(attempt-1))
	}
	if p.MaxDelay > 0 && base > float64(p.MaxDelay) {
		base = float64(p.MaxDelay)
	}
	if base > float64(math.MaxInt64/2) {
		base = float64(math.MaxInt64 / 2)
	}
	u := unitFloat(taskID, attempt)
	d := base
	switch p.Jitter.Kind {
	case JitterFull:
		d = base * u
	case JitterEqual:
		d = base/2 + base/2*u
	case JitterRatio:
		d = base * (1 + p.Jitter.Ratio*(2*u-1))
	case JitterAdditive:
		d = base + float64(p.Jitter.Max)*u
	}
	if d < 0 {
		d = 0
	}
	return time.Duration(d)
}

// unitFloat maps (taskID, attempt) to a uniform float in [0, 1) with splitmix64.
func unitFloat(taskID int64, attempt int) float64 {
	x := uint64(taskID)*0x9E3779B97F4A7C15 ^ uint64(attempt)*0xBF58476D1CE4E5B9
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	x ^= x >> 31
	return float64(x>>11) / float64(1<<53)
}
