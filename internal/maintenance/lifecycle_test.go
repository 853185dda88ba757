package maintenance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// Every service, as the runtime builds it, with short intervals.
func everyService(st *storage.Store) map[string]service {
	fast := 10 * time.Millisecond
	return map[string]service{
		"Completer":      NewCompleter(st, CompleterConfig{}),
		"HeldRetries":    NewHeldRetries(st, HeldRetriesConfig[int]{Owner: "me", Hold: time.Second, Run: func(*storage.Task, int, time.Time) {}}),
		"Heartbeater":    NewHeartbeater(st, HeartbeaterConfig{ID: "me", Interval: fast}),
		"Elector":        NewElector(st, ElectorConfig{Holder: "me", Interval: fast}),
		"Rescuer":        NewRescuer(st, RescuerConfig{Interval: fast}),
		"OrphanFlagger":  NewOrphanFlagger(st, OrphanFlaggerConfig{Interval: fast}),
		"Purger":         NewPurger(st, PurgerConfig{Retention: time.Hour, CheckInterval: fast}),
		"BlockedSweeper": NewBlockedSweeper(st, BlockedSweeperConfig{Interval: fast}),
	}
}

// mainGoroutines counts the main goroutines of the services (started or
// about to run their loop).
func mainGoroutines() int {
	n := 0
	for _, g := range serviceGoroutines() {
		if strings.Contains(g, "maintenance.(*lifecycle).start.func1") {
			n++
		}
	}
	return n
}

// Start twice runs one loop; Stop twice is fine and leaves no goroutine;
// a stopped service does not start again; Stop before Start stops it for
// good.
func TestServicesStartStopIdempotent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		for name, s := range everyService(st) {
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				for range 2 {
					if err := s.Start(ctx); err != nil {
						t.Fatalf("Start: %v", err)
					}
				}
				if n := mainGoroutines(); n != 1 {
					t.Fatalf("%d main goroutines after Start twice, want 1", n)
				}
				for range 2 {
					if err := s.Stop(ctx); err != nil {
						t.Fatalf("Stop: %v", err)
					}
				}
				checkNoServiceGoroutines(t)
				if err := s.Start(ctx); !errors.Is(err, ErrStopped) {
					t.Fatalf("Start after Stop = %v, want ErrStopped", err)
				}
				checkNoServiceGoroutines(t)
			})
		}
		for name, s := range everyService(st) {
			t.Run(name+"/StopBeforeStart", func(t *testing.T) {
				if err := s.Stop(context.Background()); err != nil {
					t.Fatal(err)
				}
				if err := s.Start(context.Background()); !errors.Is(err, ErrStopped) {
					t.Fatalf("Start after Stop = %v, want ErrStopped", err)
				}
				checkNoServiceGoroutines(t)
			})
		}
	})
}

// The end of Start's context ends every service but the completer, which
// runs until Stop so that every outcome queued is written.
func TestServicesEndWithStartContext(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		for name, s := range everyService(st) {
			t.Run(name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				if err := s.Start(ctx); err != nil {
					t.Fatal(err)
				}
				cancel()
				if name == "Completer" {
					if n := mainGoroutines(); n != 1 {
						t.Fatalf("the completer's loop ended with Start's context (%d loops)", n)
					}
				} else {
					waitFor(t, 5*time.Second, name+"'s loop to end with Start's context", func() bool { return mainGoroutines() == 0 })
				}
				if err := s.Stop(context.Background()); err != nil {
					t.Fatal(err)
				}
				checkNoServiceGoroutines(t)
			})
		}
	})
}
