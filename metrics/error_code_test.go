package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/metrics"
	"github.com/argo-retry/argo/runtime"
)

// TestErrorCodesCounted: argo_attempt_errors_total counts failed attempts
// by task and code, at most Options.ErrorCodes series; a pair first seen
// after that is counted as code "(other)", so a code taken from a
// downstream's answers cannot grow the series without bound.
func TestErrorCodesCounted(t *testing.T) {
	m := metrics.New(metrics.Options{ErrorCodes: 2})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	for _, c := range []string{"PAY_TIMEOUT", "PAY_TIMEOUT", "CARD_DECLINED", "NEW_1", "NEW_2", "CARD_DECLINED"} {
		m.AttemptErrorCode("pay", c)
	}
	want := `
# HELP argo_attempt_errors_total Failed attempts of this process by task and error code (runtime.Coded, Config.ErrorCode); attempts without a code are not counted here (argo_attempts_total counts every attempt). At most Options.ErrorCodes series; later pairs count as code="(other)".
# TYPE argo_attempt_errors_total counter
argo_attempt_errors_total{code="(other)",task="pay"} 2
argo_attempt_errors_total{code="CARD_DECLINED",task="pay"} 2
argo_attempt_errors_total{code="PAY_TIMEOUT",task="pay"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "argo_attempt_errors_total"); err != nil {
		t.Fatal(err)
	}
}

// TestOperatorRefusalsCounted: a change an operator asks for that the
// state machine refuses (force-fail or run-now of a succeeded task,
// requeue of a pending one), made through any Inspector (argoctl's, the
// console's, a program's), is counted in the database; the metrics of an
// instance that made none of them report the count, by source and move.
func TestOperatorRefusalsCounted(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			cfg := testConfig(b.DSN)
			rt, err := runtime.Start(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Stop(ctx)
			ok := &runtime.TaskDef{Name: "ok", Policy: fast(1), Run: func(context.Context, []byte) error { return nil }}
			if err := rt.Register(ok); err != nil {
				t.Fatal(err)
			}
			id, err := rt.Submit(ctx, runtime.Call{Task: ok, Args: []byte(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			db, dialect, err := runtime.OpenDB(b.DSN)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			scraper := runtime.NewInspector(db, dialect) // another process's view
			waitFinal(t, scraper, id)

			ctl := rt.Inspector()
			ctl.Source = "argoctl"
			for range 2 {
				if err := ctl.ForceFail(ctx, id, "drill"); !errors.Is(err, runtime.ErrTransitionInvalid) {
					t.Fatalf("force-fail of a succeeded task: %v", err)
				}
			}
			console := rt.Inspector()
			console.Source = "console"
			if err := console.RunNow(ctx, id, ""); !errors.Is(err, runtime.ErrTransitionInvalid) {
				t.Fatalf("run-now of a succeeded task: %v", err)
			}
			if err := rt.Inspector().Requeue(ctx, id); !errors.Is(err, runtime.ErrTransitionInvalid) {
				t.Fatalf("requeue of a succeeded task: %v", err)
			}
			if err := ctl.Requeue(ctx, id+1000); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("requeue of no task: %v", err)
			}

			m := metrics.New(metrics.Options{Inspector: scraper})
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(m)
			want := `
# HELP argo_operator_transitions_refused_total State changes operators asked for (argoctl, the console, the Inspector API: source) that the state machine refused, from the task's state to the one asked for; counted in the database (argo_refused_transition), so every instance reports the same cluster-wide total: aggregate with max, not sum. Read at scrape time.
# TYPE argo_operator_transitions_refused_total counter
argo_operator_transitions_refused_total{code="WF_STATE_TRANSITION_INVALID",from="succeeded",source="api",to="pending"} 1
argo_operator_transitions_refused_total{code="WF_STATE_TRANSITION_INVALID",from="succeeded",source="argoctl",to="dead"} 2
argo_operator_transitions_refused_total{code="WF_STATE_TRANSITION_INVALID",from="succeeded",source="console",to="running"} 1
`
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "argo_operator_transitions_refused_total"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
