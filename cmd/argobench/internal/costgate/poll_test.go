package costgate

import (
	"context"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// holdRead matches the read of the scheduled calls to hold (storage's
// ScheduledHoldCandidates) and no other statement the workloads send: a
// due time strictly after now (on MySQL the wire shows the arguments).
var holdRead = regexp.MustCompile(`(execute_time|due_at) > (\?|[0-9])`)

// A poll that has no scheduled call to hold reads none (issue #23, cause
// 2): the pokes of a submit and of a finish claim, and the read of the
// calls to hold waits for the next poll interval (an hour here). Counted
// over every measured unit, not the least window: a hold read in any unit
// fails.
func TestPokedPollReadsNoHolds(t *testing.T) {
	engines := []Engine{SQLiteEngine(func() string { return testdb.SQLiteDSN(t) })}
	if os.Getenv(testdb.EnvMySQLDSN) != "" {
		engines = append(engines, MySQLOneTripEngine(func() string { return strings.TrimPrefix(testdb.MySQLDSN(t), "mysql:") }))
	}
	var mu sync.Mutex
	reads := map[string]int{}
	StatementLog = func(engine, workload, kind, text string) {
		if holdRead.MatchString(text) {
			mu.Lock()
			reads[engine+" "+workload]++
			mu.Unlock()
		}
	}
	defer func() { StatementLog = nil }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, eng := range engines {
		for _, w := range Workloads {
			switch w.Name {
			case "claimed", "async", "retry", "orderkey", "retryafter", "outbox":
			default:
				continue
			}
			if _, err := Measure(ctx, eng, w, units); err != nil {
				t.Fatalf("%s on %s: %v", w.Name, eng.Name, err)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for k, n := range reads {
		t.Errorf("%s: %d reads of the scheduled calls to hold in %d units, want none", k, n, Windows*units)
	}
}
