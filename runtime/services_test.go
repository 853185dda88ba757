package runtime

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// maintenanceGoroutines counts the goroutines running a method of an
// internal/maintenance service.
func maintenanceGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "argo/internal/maintenance.(*") {
			count++
		}
	}
	return count
}

// Start runs every background service (the completer, the held retries,
// the heartbeater, the elector, the rescuer, the orphan flagger, the
// purger, the blocked sweeper: one goroutine each), and Stop ends every
// one of them.
func TestStopEndsEveryService(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		// Goroutines of runtimes stopped by earlier tests may still be
		// ending (a completer drains once their attempts return).
		waitFor(t, 10*time.Second, "no service goroutine before Start", func() bool { return maintenanceGoroutines() == 0 })
		rt, err := Start(context.Background(), testConfig(dsn))
		if err != nil {
			t.Fatal(err)
		}
		const services = 8
		waitFor(t, 5*time.Second, "the services to run", func() bool { return maintenanceGoroutines() == services })
		if err := rt.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "every service goroutine to end after Stop", func() bool { return maintenanceGoroutines() == 0 })
	})
}
