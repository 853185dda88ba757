package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Each transition recorded (issue #26, seed 001 §6): a task whose two
// attempts and fallback fail has three history rows, each with its move
// (running → retrying, running → exhausted, falling_back → dead) and the
// trace id of the span that attempt (or the fallback) ran in, as exported;
// a task that succeeds at once has no row, its move (running → succeeded)
// read from the task row. Without a tracer that records, no trace id.
func TestTransitionsRecordedWithTraceIDs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		exporter := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
		defer tp.Shutdown(ctx)
		cfg := testConfigT(t, dsn)
		cfg.TracerProvider = tp
		rt := startRuntime(t, cfg)
		failing := &TaskDef{Name: "charge", Policy: fastPolicy(2),
			Run:      func(context.Context, []byte) error { return errors.New("card processor down") },
			Fallback: func(context.Context, []byte, error) error { return errors.New("refund queue down") }}
		ok := &TaskDef{Name: "notify", Policy: fastPolicy(2), Run: func(context.Context, []byte) error { return nil }}
		for _, d := range []*TaskDef{failing, ok} {
			if err := rt.Register(d); err != nil {
				t.Fatal(err)
			}
		}
		dead, err := rt.Submit(ctx, Call{Task: failing, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		done, err := rt.Submit(ctx, Call{Task: ok, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, rt, dead, StateDead, 20*time.Second)
		waitState(t, rt, done, StateSucceeded, 20*time.Second)
		// Read before Stop, which closes the database; the spans after it,
		// when every attempt and fallback has returned and ended its span.
		hist, err := rt.Inspector().Attempts(ctx, dead)
		if err != nil {
			t.Fatal(err)
		}
		okHist, err := rt.Inspector().Attempts(ctx, done)
		if err != nil {
			t.Fatal(err)
		}
		// The same moves as the Inspector's one list of transitions, with an
		// operator's action on the dead task after them.
		in := rt.Inspector()
		in.Operator, in.SingleOperatorDiscard = "alice", true
		if err := in.Discard(ctx, dead, "charge written off"); err != nil {
			t.Fatal(err)
		}
		trs, err := in.Transitions(ctx, dead)
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, tr := range trs {
			listed = append(listed, fmt.Sprintf("%d %s %s %s->%s %s", tr.Attempt, tr.Kind, tr.What, tr.From, tr.To, tr.By))
		}
		wantListed := []string{"1 attempt failed running->retrying " + hist[0].Worker, "2 attempt failed running->exhausted " + hist[0].Worker,
			"2 fallback failed falling_back->dead " + hist[0].Worker, "2 operator discard dead->discarded alice"}
		if !slices.Equal(listed, wantListed) {
			t.Fatalf("Inspector.Transitions:\n%s\nwant:\n%s", strings.Join(listed, "\n"), strings.Join(wantListed, "\n"))
		}
		if err := rt.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		// The trace id of each exported span of the failing task, by kind and attempt.
		spans := map[string]string{}
		for _, s := range exporter.GetSpans() {
			if a := spanAttrs(s); a[AttrTaskID].AsInt64() == dead {
				spans[fmt.Sprintf("%s#%d", a[AttrKind].AsString(), a[AttrAttempt].AsInt64())] = s.SpanContext.TraceID().String()
			}
		}
		var got, want []string
		for _, a := range hist {
			key := fmt.Sprintf("%s#%d", a.Kind, a.Attempt)
			got = append(got, fmt.Sprintf("%s %s->%s %s", key, a.From, a.To, a.TraceID))
			if spans[key] == "" {
				t.Fatalf("no exported span for %s (spans %v)", key, spans)
			}
		}
		want = []string{
			"attempt#1 running->retrying " + spans["attempt#1"],
			"attempt#2 running->exhausted " + spans["attempt#2"],
			"fallback#2 falling_back->dead " + spans["fallback#2"],
		}
		if !slices.Equal(got, want) {
			t.Fatalf("history of the dead task:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if len(okHist) != 1 || okHist[0].From != StateRunning || okHist[0].To != StateSucceeded || okHist[0].TraceID != "" {
			t.Fatalf("history of the task that succeeded: %+v; want its attempt, running -> succeeded, from the task row", okHist)
		}
	})
}

// TestTransitionsMigrationDownUp: 000024's down file, as a DBA applies it,
// leaves a schema the check names 000024 for; its up file brings the
// columns back, and Migrate after it (the file applied again, as a second
// process racing the first would) changes nothing and fails nothing; a row
// written before the migration reads back with its move unrecorded. On
// both databases.
func TestTransitionsMigrationDownUp(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := freshStore(t, dsn)
		apply := func(file string) { t.Helper(); applyMigrationFile(t, ctx, s, file) }
		apply("000024_attempt_transitions.down.sql")
		var se *SchemaError
		if err := s.CheckSchema(ctx); !errors.As(err, &se) || se.Migration != "000024_attempt_transitions.up.sql" {
			t.Fatalf("after the down file: %v, want a SchemaError naming 000024_attempt_transitions.up.sql", err)
		}
		// A row written by a binary before 000024.
		if _, err := s.DB().ExecContext(ctx, "INSERT INTO argo_task_attempt (task_pk, attempt, kind, worker, started_at, finished_at, outcome, error_msg, backoff_ms) VALUES (1, 1, 'attempt', 'w', 1, 2, 'failed', 'boom', 0)"); err != nil {
			t.Fatal(err)
		}
		apply("000024_attempt_transitions.up.sql")
		if err := s.CheckSchema(ctx); err != nil {
			t.Fatalf("after the up file: %v", err)
		}
		if _, err := s.DB().ExecContext(ctx, "DELETE FROM argo_schema_migrations WHERE version = 24"); err != nil {
			t.Fatal(err)
		}
		if _, err := Migrate(ctx, s.DB(), s.Dialect()); err != nil {
			t.Fatalf("migrating again over the applied file: %v", err)
		}
		atts, err := s.Attempts(ctx, 1)
		if err != nil || len(atts) != 1 || atts[0].From != StateUnrecorded || atts[0].To != StateUnrecorded || atts[0].TraceID != "" {
			t.Fatalf("the row written before 000024: %+v, %v; want its move unrecorded and no trace id", atts, err)
		}
	})
}
