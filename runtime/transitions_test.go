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
