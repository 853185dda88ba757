package maintenance

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// The flagger marks due tasks that no live instance has a handler for
// (their rows say why they wait, their state and due time unchanged), and
// names them in one ERROR line; tasks a live instance runs, tasks not yet
// due long enough, and names only a dead instance ran are told apart.
func TestOrphanFlaggerFlagsTasksWithoutHandler(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		ctx, now := context.Background(), time.Now()
		for id, beat := range map[string]time.Time{"alive": now, "dead": now.Add(-time.Hour)} {
			names := map[string][]string{"alive": {"handled"}, "dead": {"dead-only"}}[id]
			if err := st.RecordHeartbeat(ctx, id, names, storage.ToMillis(beat)); err != nil {
				t.Fatal(err)
			}
		}
		long := storage.ToMillis(now.Add(-time.Hour))
		orphan, deadOnly := sampleTask("orphan", storage.StatePending, long), sampleTask("dead-only", storage.StateRetrying, long)
		handled, recent := sampleTask("handled", storage.StatePending, long), sampleTask("orphan", storage.StatePending, storage.ToMillis(now))
		mustInsert(t, st, orphan, deadOnly, handled, recent)
		var logs logBuffer
		o := NewOrphanFlagger(st, OrphanFlaggerConfig{Interval: 5 * time.Millisecond, After: time.Minute, InstanceTimeout: time.Minute, Logger: logs.logger()})
		if err := o.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer o.Stop(ctx)
		waitFor(t, 5*time.Second, "the flag line", func() bool { return len(logs.lines("no handler on any live instance")) > 0 })
		if err := o.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		checkNoServiceGoroutines(t)
		lines := logs.lines("no handler on any live instance")
		if len(lines) != 1 || !contains(lines[0], "tasks=2") || !contains(lines[0], `names="dead-only, orphan"`) || !contains(lines[0], "level=ERROR") {
			t.Fatalf("flag lines %q, want one ERROR naming dead-only and orphan", lines)
		}
		for _, task := range []*storage.Task{orphan, deadOnly} {
			row := mustGet(t, st, task.ID)
			if !strings.HasPrefix(row.ErrorMsg, storage.OrphanMsgPrefix) || row.State != task.State || row.ExecuteTime != task.ExecuteTime {
				t.Errorf("%s: %s due %d msg %q; want its state and due time, and flagged", task.Name, row.State, row.ExecuteTime, row.ErrorMsg)
			}
		}
		for _, task := range []*storage.Task{handled, recent} {
			if row := mustGet(t, st, task.ID); row.ErrorMsg != "" {
				t.Errorf("%s (due %s) flagged: %q", task.Name, task.ExecuteTime.Time(), row.ErrorMsg)
			}
		}
	})
}

// With no instance heartbeating recently (this one's first heartbeat not
// yet written, or late under load) nothing is known, and the flagger
// flags nothing: it overwrote the last error of every due task with "no
// handler … on any live instance ()", and a fallback then got that text as
// its cause (runtime TestFallbackAndDead under load).
func TestOrphanFlaggerWaitsForALiveInstance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		ctx, now := context.Background(), time.Now()
		if err := st.RecordHeartbeat(ctx, "late", []string{"handled"}, storage.ToMillis(now.Add(-time.Hour))); err != nil {
			t.Fatal(err)
		}
		task := sampleTask("handled", storage.StateRetrying, storage.ToMillis(now.Add(-time.Hour)))
		task.ErrorMsg = "always"
		mustInsert(t, st, task)
		var passes atomic.Int32
		o := NewOrphanFlagger(st, OrphanFlaggerConfig{Interval: 5 * time.Millisecond, After: time.Minute, InstanceTimeout: time.Minute,
			Leading: func() bool { passes.Add(1); return true }})
		if err := o.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer o.Stop(ctx)
		// Asked a third time: at least two passes ended.
		waitFor(t, 5*time.Second, "two passes", func() bool { return passes.Load() >= 3 })
		if err := o.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if row := mustGet(t, st, task.ID); row.ErrorMsg != "always" {
			t.Fatalf("with no live instance the flagger wrote %q over the task's last error", row.ErrorMsg)
		}
	})
}

// Stop returns within its context while the flagger is stuck asking
// whether it may run.
func TestOrphanFlaggerStopBoundedByContext(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		stuck, g := make(chan struct{}, 1), newGate()
		o := NewOrphanFlagger(st, OrphanFlaggerConfig{Interval: 5 * time.Millisecond,
			Leading: func() bool { stuck <- struct{}{}; g.wait(); return false }})
		if err := o.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		receive(t, stuck, "the flagger to ask whether it may run")
		checkStopBounded(t, o, g.open)
	})
}
