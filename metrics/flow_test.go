package metrics_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/metrics"
	"github.com/argo-retry/argo/runtime"
)

// A flow group's breaker shows in the scrape: closed after its first
// claim, open (forced) after an operator opens it.
func TestFlowBreakerGauge(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			rt, err := runtime.Start(ctx, testConfig(b.DSN))
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Stop(ctx)
			def := &runtime.TaskDef{Name: "print", Policy: fast(3), Flow: &runtime.FlowControl{Group: "printer", Limit: 2},
				Run: func(context.Context, []byte) error { return nil }}
			if err := rt.Register(def); err != nil {
				t.Fatal(err)
			}
			in := rt.Inspector()
			id, err := rt.Submit(ctx, runtime.Call{Task: def, Args: []byte(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			waitFinal(t, in, id)
			m := metrics.New(metrics.Options{Inspector: in})
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(m)
			const help = `
# HELP argo_flow_breaker_open 1 while a flow group's circuit breaker is not closed (open, half-open with a probe out, or opened by an operator), else 0; read at scrape time.
# TYPE argo_flow_breaker_open gauge
`
			if err := testutil.GatherAndCompare(reg, strings.NewReader(help+`argo_flow_breaker_open{group="printer",state="closed"} 0
`), "argo_flow_breaker_open"); err != nil {
				t.Fatal(err)
			}
			if err := in.OpenBreaker(ctx, "printer", ""); err != nil {
				t.Fatal(err)
			}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(help+`argo_flow_breaker_open{group="printer",state="forced-open"} 1
`), "argo_flow_breaker_open"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
