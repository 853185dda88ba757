package runtime

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// recordLevels is a slog handler that keeps each record's level and message.
type recordLevels struct {
	mu   sync.Mutex
	recs []string
}

func (r *recordLevels) Enabled(context.Context, slog.Level) bool { return true }
func (r *recordLevels) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recordLevels) WithGroup(string) slog.Handler            { return r }
func (r *recordLevels) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Level.String()+" "+rec.Message)
	return nil
}

func (r *recordLevels) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.recs
	r.recs = nil
	return out
}

// A broken connection that heals at once is not logged as an outage; a
// lasting one is logged once when announced and once when it ends; a failure
// right after that is the same outage, a warning.
func TestHealthLogsOutagesOnce(t *testing.T) {
	logs := &recordLevels{}
	rt := &Runtime{cfg: Config{PollInterval: 10 * time.Millisecond, LeaseDuration: time.Hour}, log: slog.New(logs), wake: make(chan struct{}, 1)}
	var h health
	boom := errors.New("invalid connection")

	h.failed(rt, "claim", boom)
	h.ok(rt)
	if got := logs.take(); len(got) != 1 || got[0] != "DEBUG argo: transient database error passed" {
		t.Fatalf("transient error logged %q", got)
	}

	h.failed(rt, "claim", boom)
	for range 5 {
		h.failed(rt, "heartbeat", boom) // within announceAfter: not yet
	}
	if got := logs.take(); len(got) != 0 {
		t.Fatalf("logged before the outage lasted %s: %q", announceAfter, got)
	}
	h.since = h.since.Add(-(announceAfter + 50*time.Millisecond)) // the outage began announceAfter ago: backdated, not slept
	for range 5 {
		h.failed(rt, "claim", boom)
	}
	h.ok(rt)
	got := logs.take()
	if len(got) != 2 || got[0] != "ERROR argo: database unreachable; tasks keep their rows, polling backs off until it answers" || got[1] != "INFO argo: database reachable again" {
		t.Fatalf("outage logged as %q, want one error and one info", got)
	}
	h.failed(rt, "claim", boom)
	h.failed(rt, "claim", boom)
	if got := logs.take(); len(got) != 1 || got[0] != "WARN argo: database unreachable again right after it answered" {
		t.Fatalf("flap logged as %q", got)
	}
}
