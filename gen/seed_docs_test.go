package gen

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/argotype"
)

// TestSeedPageRecipes: each directive a page of docs/seeds gives for its
// design's defaults is quoted there as written here, parses without error,
// and yields the design's delays (before jitter, and within its jitter).
func TestSeedPageRecipes(t *testing.T) {
	const taskID = 42
	for _, c := range []struct {
		page, recipe string
		attempts     int                                    // max attempts, the first included
		base         func(n int) time.Duration              // the design's delay before retry n, before jitter
		jitter       func(d time.Duration) [2]time.Duration // the design's bounds around it
	}{
		{
			page: "001-task-system-spec.md", recipe: "retries=3 backoff=exponential delay=1s max-delay=30s jitter=+300ms", attempts: 4,
			base:   func(n int) time.Duration { return min(30*time.Second, time.Second<<(n-1)) },
			jitter: func(d time.Duration) [2]time.Duration { return [2]time.Duration{d, d + 300*time.Millisecond} },
		},
		{
			page: "002-orchestrator-resilience.md", recipe: "retries=3 delay=1s max-delay=10s jitter=equal", attempts: 4,
			base:   func(n int) time.Duration { return min(10*time.Second, time.Second<<(n-1)) },
			jitter: func(d time.Duration) [2]time.Duration { return [2]time.Duration{d / 2, d} },
		},
		{
			page: "002-orchestrator-resilience.md", recipe: "retries=3 delay=1s jitter=none", attempts: 4,
			base:   func(n int) time.Duration { return time.Second << (n - 1) }, // 1 s, 2 s, 4 s
			jitter: func(d time.Duration) [2]time.Duration { return [2]time.Duration{d, d} },
		},
		{
			page: "004-async-execution-component.md", recipe: "retries=15 delay=5s max-delay=1h", attempts: 16,
			base: func(n int) time.Duration { return min(time.Hour, 5*time.Second<<(n-1)) },
			jitter: func(d time.Duration) [2]time.Duration {
				return [2]time.Duration{d - d/10, d + d/10}
			},
		},
		{
			page: "003-argo-java-starter.md", recipe: "backoff=linear delay=60s max-delay=0", attempts: 4,
			base:   func(n int) time.Duration { return time.Duration(n) * time.Minute }, // no cap
			jitter: func(d time.Duration) [2]time.Duration { return [2]time.Duration{d - d/10, d + d/10} },
		},
		{
			page: "000-aster-workflow-retry.md", recipe: "jitter=+500ms", attempts: 4,
			base:   func(n int) time.Duration { return min(time.Minute, time.Second<<(n-1)) },
			jitter: func(d time.Duration) [2]time.Duration { return [2]time.Duration{d, d + 500*time.Millisecond} },
		},
	} {
		text, err := os.ReadFile(filepath.Join("..", "docs", "seeds", c.page))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), "`"+c.recipe+"`") && !strings.Contains(string(text), "`//argo:retry "+c.recipe+"`") {
			t.Errorf("%s does not quote the directive `%s`", c.page, c.recipe)
			continue
		}
		s, errs := parse(t, "//argo:retry "+c.recipe)
		if len(errs) != 0 {
			t.Errorf("%s: %s: %v", c.page, c.recipe, errs)
			continue
		}
		if s.policy.MaxAttempts != c.attempts {
			t.Errorf("%s: %s: %d attempts, want %d", c.page, c.recipe, s.policy.MaxAttempts, c.attempts)
		}
		for n := 1; n < c.attempts; n++ {
			bounds := c.jitter(c.base(n))
			if d := s.policy.Delay(taskID, n); d < bounds[0] || d > bounds[1] {
				t.Errorf("%s: %s: delay before retry %d = %s, want within [%s, %s]", c.page, c.recipe, n, d, bounds[0], bounds[1])
			}
		}
	}
}

// TestSeedPagesDefaults: what the seed pages call argo's default policy is
// argotype.DefaultRetryPolicy.
func TestSeedPagesDefaults(t *testing.T) {
	const stated = "backoff=exponential delay=1s multiplier=2 max-delay=1m jitter=10%"
	text, err := os.ReadFile(filepath.Join("..", "docs", "seeds", "003-argo-java-starter.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "argo's default is `"+stated+"`") {
		t.Fatalf("003-argo-java-starter.md no longer states argo's default as `%s`", stated)
	}
	s, errs := parse(t, "//argo:retry retries=3 "+stated)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if !reflect.DeepEqual(s.policy, argotype.DefaultRetryPolicy()) {
		t.Errorf("the pages' default %+v differs from DefaultRetryPolicy %+v", s.policy, argotype.DefaultRetryPolicy())
	}
}

// TestJavaExecuteIntervalMapping: the Java starter's executeIntervalSec=60
// (linear, no cap, no jitter, no limit) is the directive the seed 003 page
// and the README give, with delays of exactly n × 60 s before retry n; the
// shorter `backoff=linear delay=60s` stays a fixed 60 s under argo's
// default cap of 1m, the trap the page warns of.
func TestJavaExecuteIntervalMapping(t *testing.T) {
	const recipe = "retries=unlimited backoff=linear delay=60s max-delay=0 jitter=none"
	for _, doc := range []string{filepath.Join("..", "docs", "seeds", "003-argo-java-starter.md"), filepath.Join("..", "README.md")} {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), "`"+recipe+"`") {
			t.Errorf("%s does not quote `%s`", doc, recipe)
		}
	}
	s, errs := parse(t, "//argo:retry "+recipe)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if s.policy.MaxAttempts != argotype.Unlimited || s.policy.MaxDelay != 0 {
		t.Fatalf("%s: policy %+v, want unlimited attempts and no cap", recipe, s.policy)
	}
	for n := 1; n <= 100; n++ {
		if d := s.policy.Delay(42, n); d != time.Duration(n)*time.Minute {
			t.Fatalf("%s: delay before retry %d = %s, want %d min", recipe, n, d, n)
		}
	}
	capped, errs := parse(t, "//argo:retry backoff=linear delay=60s jitter=none")
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	for n := 1; n <= 3; n++ {
		if d := capped.policy.Delay(42, n); d != time.Minute {
			t.Fatalf("backoff=linear delay=60s: delay before retry %d = %s, want the default cap's fixed 1m", n, d)
		}
	}
}
