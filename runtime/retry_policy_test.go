package runtime

import (
	"testing"
	"time"
)

func TestBackoffKinds(t *testing.T) {
	none := Jitter{Kind: JitterNone}
	cases := []struct {
		p    RetryPolicy
		want []time.Duration // delays after attempts 1, 2, 3, 4
	}{
		{RetryPolicy{Backoff: BackoffFixed, Initial: time.Second, Jitter: none}, []time.Duration{time.Second, time.Second, time.Second, time.Second}},
		{RetryPolicy{Backoff: BackoffLinear, Initial: time.Second, Jitter: none}, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second}},
		{RetryPolicy{Backoff: BackoffExponential, Initial: time.Second, Multiplier: 3, MaxDelay: 10 * time.Second, Jitter: none}, []time.Duration{time.Second, 3 * time.Second, 9 * time.Second, 10 * time.Second}},
		{RetryPolicy{Backoff: BackoffExponential, Initial: 5 * time.Second, MaxDelay: time.Hour, Jitter: none}, []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second}},
	}
	for _, c := range cases {
		for i, want := range c.want {
			if got := c.p.Delay(42, i+1); got != want {
				t.Errorf("%s: delay after attempt %d = %s, want %s", c.p.Backoff, i+1, got, want)
			}
		}
	}
}

func TestJitterBoundsAndDeterminism(t *testing.T) {
	base := RetryPolicy{Backoff: BackoffFixed, Initial: time.Second}
	cases := []struct {
		j      string
		lo, hi time.Duration
	}{
		{"none", time.Second, time.Second},
		{"full", 0, time.Second},
		{"equal", 500 * time.Millisecond, time.Second},
		{"10%", 900 * time.Millisecond, 1100 * time.Millisecond},
		{"+300ms", time.Second, 1300 * time.Millisecond},
	}
	for _, c := range cases {
		j, err := ParseJitter(c.j)
		if err != nil {
			t.Fatal(err)
		}
		if j.String() != c.j {
			t.Errorf("ParseJitter(%q).String() = %q", c.j, j.String())
		}
		p := base
		p.Jitter = j
		seen := map[time.Duration]bool{}
		for id := int64(1); id <= 200; id++ {
			d := p.Delay(id, 1)
			if d < c.lo || d > c.hi {
				t.Fatalf("jitter %s: %s outside [%s, %s]", c.j, d, c.lo, c.hi)
			}
			if d != p.Delay(id, 1) {
				t.Fatalf("jitter %s is not deterministic", c.j)
			}
			seen[d] = true
		}
		if c.lo != c.hi && len(seen) < 100 {
			t.Errorf("jitter %s: only %d distinct delays over 200 tasks", c.j, len(seen))
		}
	}
	for _, bad := range []string{"lots", "0%", "150%", "+", "+-1s", "x%"} {
		if _, err := ParseJitter(bad); err == nil {
			t.Errorf("ParseJitter(%q) accepted", bad)
		}
	}
}

func TestPolicyLimits(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 4, Backoff: BackoffFixed}
	if p.Exhausted(3) || !p.Exhausted(4) {
		t.Fatal("MaxAttempts 4 must allow exactly 4 attempts")
	}
	unlimited := RetryPolicy{MaxAttempts: Unlimited, Backoff: BackoffExponential, Initial: time.Second, MaxDelay: time.Minute}
	if unlimited.Exhausted(1 << 20) {
		t.Fatal("unlimited policy exhausted")
	}
	if d := unlimited.Delay(1, 5000); d > time.Minute+6*time.Second {
		t.Fatalf("capped delay after 5000 attempts = %s", d)
	}
	for _, bad := range []RetryPolicy{{Backoff: "random"}, {Backoff: BackoffFixed, MaxAttempts: -1}, {Backoff: BackoffExponential, Multiplier: 0.5}, {Backoff: BackoffFixed, Jitter: Jitter{Kind: JitterRatio, Ratio: 2}}} {
		if bad.Validate() == nil {
			t.Errorf("Validate(%+v) accepted", bad)
		}
	}
	if err := DefaultRetryPolicy().Validate(); err != nil {
		t.Fatal(err)
	}
	dec, err := decodePolicy(encodePolicy(DefaultRetryPolicy()))
	if err != nil || dec != DefaultRetryPolicy() {
		t.Fatalf("policy JSON round trip: %+v, %v", dec, err)
	}
	if _, err := decodePolicy("{not json"); err == nil {
		t.Fatal("corrupted retry_policy accepted")
	}
}
