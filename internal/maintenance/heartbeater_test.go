package maintenance

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// liveIDs lists the instances that heartbeated within the last minute.
func liveIDs(t *testing.T, st *storage.Store) []string {
	t.Helper()
	rows, err := st.LiveInstances(context.Background(), storage.ToMillis(time.Now().Add(-time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	return ids
}

// Every beat reads the clock first (Before), writes the row with the
// instance's names, and hands the live instances to Live; Stop removes the
// row.
func TestHeartbeaterKeepsTheInstanceRow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		if err := st.RecordHeartbeat(context.Background(), "other", []string{"x"}, storage.ToMillis(time.Now())); err != nil {
			t.Fatal(err)
		}
		var befores, probes atomic.Int32
		var mu sync.Mutex
		var lastNames []string
		var lastLive []storage.Instance
		beats := make(chan struct{}, 100)
		h := NewHeartbeater(st, HeartbeaterConfig{ID: "me", Interval: 10 * time.Millisecond, InstanceTimeout: time.Minute,
			Names:  func() []string { return []string{"a", "b"} },
			Before: func(context.Context) error { befores.Add(1); return nil },
			Live: func(names []string, live []storage.Instance) {
				mu.Lock()
				lastNames, lastLive = names, live
				mu.Unlock()
				select {
				case beats <- struct{}{}:
				default:
				}
			},
			Probed: func() { probes.Add(1) },
		})
		ctx := context.Background()
		if err := h.Beat(ctx); err != nil {
			t.Fatal(err)
		}
		<-beats // Beat's own
		if ids := liveIDs(t, st); !slices.Equal(ids, []string{"me", "other"}) {
			t.Fatalf("live after one beat: %q", ids)
		}
		if err := h.Start(ctx); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			select {
			case <-beats:
			case <-time.After(5 * time.Second):
				t.Fatal("fewer than 3 beats of the loop in 5s")
			}
		}
		if err := h.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		checkNoServiceGoroutines(t)
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(lastNames, []string{"a", "b"}) || len(lastLive) != 2 || lastLive[0].ID != "me" || !slices.Equal(lastLive[0].Names, []string{"a", "b"}) {
			t.Fatalf("Live got names %q, live %+v", lastNames, lastLive)
		}
		if befores.Load() < 4 || probes.Load() < 3 {
			t.Fatalf("%d clock readings, %d probes for 4 beats or more", befores.Load(), probes.Load())
		}
		if ids := liveIDs(t, st); !slices.Equal(ids, []string{"other"}) {
			t.Fatalf("live after Stop: %q, want only other (this row removed)", ids)
		}
	})
}

// A failed clock reading ends the beat before the row is written, and is
// reported as a failed heartbeat.
func TestHeartbeaterReportsFailedBeats(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		boom := errors.New("clock unreadable")
		failed := make(chan error, 10)
		h := NewHeartbeater(st, HeartbeaterConfig{ID: "me", Interval: 10 * time.Millisecond,
			Before: func(context.Context) error { return boom },
			Failed: func(op string, err error) {
				if op == "heartbeat" {
					select {
					case failed <- err:
					default:
					}
				}
			}})
		if err := h.Beat(context.Background()); !errors.Is(err, boom) {
			t.Fatalf("Beat = %v, want the clock's error", err)
		}
		if err := h.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer h.Stop(context.Background())
		select {
		case err := <-failed:
			if !errors.Is(err, boom) {
				t.Fatalf("Failed got %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no failed heartbeat reported in 5s")
		}
		if ids := liveIDs(t, st); len(ids) != 0 {
			t.Fatalf("rows written by beats whose clock reading failed: %q", ids)
		}
	})
}

// Stop returns within its context while a beat is stuck in Live.
func TestHeartbeaterStopBoundedByContext(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		stuck, g := make(chan struct{}, 1), newGate()
		h := NewHeartbeater(st, HeartbeaterConfig{ID: "me", Interval: 10 * time.Millisecond,
			Live: func([]string, []storage.Instance) { stuck <- struct{}{}; g.wait() }})
		if err := h.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-stuck:
		case <-time.After(5 * time.Second):
			t.Fatal("no beat within 5s")
		}
		checkStopBounded(t, h, g.open)
	})
}
