package runtime

import (
	"testing"
	"time"
)

// The breaker's release outlasts a short ReleaseFor while the tasks it
// held back wait: 40 tasks released at 20/s take 2 s, ReleaseFor is
// 500 ms, and the peak of admissions per 100 ms after the return stays
// within the release's bound, where the rest used to start at once when
// ReleaseFor ended.
func TestFlowBreakerReleaseOutlastsReleaseFor(t *testing.T) {
	forEachFlowBackend(t, func(t *testing.T, dsn string) {
		const tasks = 40
		br := &Breaker{Failures: 5, Window: 10 * time.Second, Cooldown: 200 * time.Millisecond, MaxCooldown: 400 * time.Millisecond,
			ProbeTimeout: 5 * time.Second, ReleaseRate: 20, ReleaseFor: 500 * time.Millisecond}
		r := runOutage(t, dsn, br, tasks, 2*time.Second)
		t.Logf("release at 20/s for at least 500 ms of %d tasks: recovery %s, peak %d starts/100 ms after return", tasks, r.recovery.Round(time.Millisecond), r.peakPer100ms)
		// 20/s from an empty bucket of one is at most 3 admissions per 100 ms;
		// one more for the probe that closed it, one for the two instances'
		// clock readings (as TestFlowBreakerOutage).
		if r.peakPer100ms > 5 {
			t.Fatalf("after the return %d calls started within 100 ms: the release (20/s) ended before the backlog drained", r.peakPer100ms)
		}
		// Bounded: the backlog drains at the release rate (2 s), so recovery
		// does not wait for anything else.
		if r.recovery > 10*time.Second {
			t.Fatalf("recovery took %s, the backlog of %d at 20/s needs 2 s", r.recovery, tasks)
		}
	})
}
