package runtime

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkSyncCall is one sync call that succeeds at once, on SQLite:
// submit, attempt, outcome. With no tracer provider installed (the global
// no-op one) its spans must cost nothing measurable (docs/tenants-and-traces.md).
func BenchmarkSyncCall(b *testing.B) {
	cfg := testConfig("sqlite:" + filepath.Join(b.TempDir(), "argo.db"))
	rt := startRuntime(b, cfg)
	def := &TaskDef{Name: "bench", Thread: Sync, Policy: fastPolicy(1), Run: func(context.Context, []byte) error { return nil }}
	if err := rt.Register(def); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rt.Submit(ctx, Call{Task: def, Args: []byte(`{}`)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNoopTaskSpan is the span of one attempt with the global no-op
// provider: what every attempt pays when no exporter is configured.
func BenchmarkNoopTaskSpan(b *testing.B) {
	rt := &Runtime{}
	task := &Task{ID: 1, Name: "bench", ExecuteTimes: 1}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, span := rt.startTaskSpan(ctx, task, "attempt")
		endTaskSpan(span, OutcomeSucceeded, nil)
	}
}
