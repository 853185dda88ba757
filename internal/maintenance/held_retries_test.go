package maintenance

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// heldRow inserts a retry held by owner, due at due, and returns it with
// the finish that held it.
func heldRow(t *testing.T, st *storage.Store, name, owner string, due time.Time, lease time.Duration) (*storage.Task, storage.Finishing) {
	t.Helper()
	task := sampleTask(name, storage.StateRetrying, storage.ToMillis(due))
	task.ExecuteTimes, task.LeaseOwner, task.LeaseUntil = 1, owner, storage.ToMillis(due.Add(lease))
	mustInsert(t, st, task)
	ran := *task
	ran.State = storage.StateRunning // as the failed attempt ran
	return &ran, storage.Finishing{To: storage.StateRetrying, Due: task.ExecuteTime, HoldUntil: task.LeaseUntil}
}

// startedRun records the retries the held retries hand to Run, and the
// registrations with the (runtime's) Stop.
type startedRun struct {
	mu         sync.Mutex
	runs       []*storage.Task
	handlers   []int
	dues       []time.Time
	registered atomic.Int64
	hs         *HeldRetries[int]
}

func (s *startedRun) config(lease time.Duration) HeldRetriesConfig[int] {
	return HeldRetriesConfig[int]{Owner: "me", Hold: time.Hour, LeaseDuration: lease,
		Register:   func(n int) int { s.registered.Add(int64(n)); return n },
		Unregister: func(k int) { s.registered.Add(-int64(k)) },
		Run: func(t *storage.Task, h int, due time.Time) {
			s.mu.Lock()
			s.runs, s.handlers, s.dues = append(s.runs, t), append(s.handlers, h), append(s.dues, due)
			s.mu.Unlock()
			s.registered.Add(-1) // the runtime's run ends the registration
			s.hs.DoneWaiting()
		}}
}

func (s *startedRun) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}

// A held retry is started at its due time: one fenced write makes it
// running, leased by its owner for LeaseDuration, at its next attempt,
// and Run gets it with its handler.
func TestHeldRetriesStartOnTime(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		var s startedRun
		s.hs = NewHeldRetries(st, s.config(time.Minute))
		due := time.Now().Add(300 * time.Millisecond)
		task, f := heldRow(t, st, "held", "me", due, time.Minute)
		if err := s.hs.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer s.hs.Stop(context.Background())
		s.hs.Hold(task, 42, f, due)
		if s.hs.Held() != 1 {
			t.Fatalf("Held() = %d after one hold", s.hs.Held())
		}
		waitFor(t, 5*time.Second, "the held retry to start", func() bool { return s.count() == 1 })
		if early := time.Until(due); early > HeldStartLead {
			t.Fatalf("started %s before its due time (lead %s)", early, HeldStartLead)
		}
		s.mu.Lock()
		got, h, gotDue := s.runs[0], s.handlers[0], s.dues[0]
		s.mu.Unlock()
		if h != 42 || !gotDue.Equal(due) || got.State != storage.StateRunning || got.ExecuteTimes != 2 || got.LeaseOwner != "me" {
			t.Fatalf("Run got handler %d due %s, task %s attempt %d owner %q", h, gotDue, got.State, got.ExecuteTimes, got.LeaseOwner)
		}
		row := mustGet(t, st, task.ID)
		if row.State != storage.StateRunning || row.ExecuteTimes != 2 || row.LeaseOwner != "me" || row.LeaseUntil != got.LeaseUntil {
			t.Fatalf("row %s attempt %d owner %q lease %d, want running attempt 2 leased by me until %d", row.State, row.ExecuteTimes, row.LeaseOwner, row.LeaseUntil, got.LeaseUntil)
		}
		if err := s.hs.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		checkNoServiceGoroutines(t)
		if n := s.registered.Load(); n != 0 || s.hs.Waiting() != 0 {
			t.Fatalf("%d registrations, %d waiting left", n, s.hs.Waiting())
		}
	})
}

// Stop gives the holds still queued back: their rows keep their due time
// but no owner, so any instance claims them; a hold after Stop is given
// back at once.
func TestHeldRetriesGivenBackAtStop(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		var s startedRun
		s.hs = NewHeldRetries(st, s.config(time.Minute))
		due := time.Now().Add(time.Hour)
		queued, f := heldRow(t, st, "queued", "me", due, time.Minute)
		late, lf := heldRow(t, st, "late", "me", due, time.Minute)
		if err := s.hs.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.hs.Hold(queued, 1, f, due)
		if err := s.hs.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		checkNoServiceGoroutines(t)
		s.hs.Hold(late, 2, lf, due)
		for _, task := range []*storage.Task{queued, late} {
			row := mustGet(t, st, task.ID)
			if row.State != storage.StateRetrying || row.LeaseOwner != "" || row.LeaseUntil != 0 || row.ExecuteTime != task.ExecuteTime {
				t.Errorf("%s after Stop: %s owner %q lease %d due %d; want retrying, no owner, due %d", task.Name, row.State, row.LeaseOwner, row.LeaseUntil, row.ExecuteTime, task.ExecuteTime)
			}
		}
		if s.hs.Held() != 0 || s.count() != 0 {
			t.Fatalf("%d held, %d run after Stop", s.hs.Held(), s.count())
		}
	})
}

// A held retry discarded meanwhile is not started; Stop logs the skips of
// a window still open in one line.
func TestHeldRetriesSkipChangedRows(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		var logs logBuffer
		var s startedRun
		cfg := s.config(time.Minute)
		cfg.Logger = logs.logger()
		s.hs = NewHeldRetries(st, cfg)
		due := time.Now().Add(100 * time.Millisecond)
		var ids []int64
		for range 3 {
			task, f := heldRow(t, st, "discarded", "me", due, time.Minute)
			if err := st.Discard(context.Background(), task.ID, "test", storage.ToMillis(time.Now())); err != nil {
				t.Fatal(err)
			}
			s.hs.Hold(task, 1, f, due)
			ids = append(ids, task.ID)
		}
		if err := s.hs.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "the starts to be refused", func() bool { return s.hs.Held() == 0 && s.hs.Waiting() == 0 })
		if lines := logs.lines("not started"); len(lines) != 0 {
			t.Fatalf("logged before the window closed: %q", lines)
		}
		if err := s.hs.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		lines := logs.lines("not started")
		if len(lines) != 1 || !strings.Contains(lines[0], "tasks=3") || !strings.Contains(lines[0], "names=\"discarded (3)\"") {
			t.Fatalf("skip lines %q, want one for 3 discarded", lines)
		}
		if s.count() != 0 || s.registered.Load() != 0 {
			t.Fatalf("%d run, %d registrations left", s.count(), s.registered.Load())
		}
		for _, id := range ids {
			if row := mustGet(t, st, id); row.State != storage.StateDiscarded {
				t.Fatalf("task %d %s, want discarded", id, row.State)
			}
		}
	})
}

// Retries are held only within Hold, and not at all with Hold zero or less.
func TestHeldRetriesCanHold(t *testing.T) {
	for _, c := range []struct {
		hold, delay time.Duration
		want        bool
	}{{time.Second, time.Second, true}, {time.Second, 2 * time.Second, false}, {0, time.Millisecond, false}, {-1, 0, false}} {
		hs := NewHeldRetries(nil, HeldRetriesConfig[int]{Hold: c.hold})
		if got := hs.CanHold(c.delay); got != c.want {
			t.Errorf("Hold %s: CanHold(%s) = %v, want %v", c.hold, c.delay, got, c.want)
		}
	}
}

// Room is what MaxHeld leaves for more holds (scheduled calls are held up
// to it), and nothing when holding is disabled.
func TestHeldRetriesRoom(t *testing.T) {
	if got := NewHeldRetries(nil, HeldRetriesConfig[int]{Hold: 0, MaxHeld: 3}).Room(); got != 0 {
		t.Errorf("Hold 0: Room() = %d, want 0", got)
	}
	hs := NewHeldRetries(nil, HeldRetriesConfig[int]{Owner: "me", Hold: time.Second, MaxHeld: 3})
	if got := hs.Room(); got != 3 {
		t.Errorf("Room() = %d, want MaxHeld (3)", got)
	}
	hs.HoldScheduled(&storage.Task{ID: 1, LeaseUntil: 5000}, 0, time.Now().Add(time.Hour))
	hs.HoldScheduled(&storage.Task{ID: 2, LeaseUntil: 5000}, 0, time.Now().Add(time.Hour))
	if got, held := hs.Room(), hs.Held(); got != 1 || held != 2 {
		t.Errorf("after 2 holds: Room() = %d, Held() = %d, want 1 and 2", got, held)
	}
}

// Stop returns within its context while a started retry is stuck in Run.
func TestHeldRetriesStopBoundedByContext(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		stuck, g := make(chan struct{}, 1), newGate()
		hs := NewHeldRetries(st, HeldRetriesConfig[int]{Owner: "me", Hold: time.Hour,
			Run: func(*storage.Task, int, time.Time) { stuck <- struct{}{}; g.wait() }})
		due := time.Now()
		task, f := heldRow(t, st, "held", "me", due, time.Minute)
		if err := hs.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		hs.Hold(task, 1, f, due)
		select {
		case <-stuck:
		case <-time.After(5 * time.Second):
			t.Fatal("no start within 5s")
		}
		checkStopBounded(t, hs, g.open)
	})
}
