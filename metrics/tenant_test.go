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

// TestDeadLettersPerTenant: argo_dead_tasks has one series per tenant with
// dead letters, and tenant="" for tasks without one.
func TestDeadLettersPerTenant(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			rt, err := runtime.Start(ctx, testConfig(b.DSN))
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Stop(ctx)
			doomed := &runtime.TaskDef{Name: "doomed", Policy: fast(1), Run: func(context.Context, []byte) error { return errors.New("always") }}
			if err := rt.Register(doomed); err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, tenant := range []string{"eu", "eu", "us", ""} {
				id, err := rt.Submit(runtime.WithTenant(ctx, tenant), runtime.Call{Task: doomed, Args: []byte(`{}`)})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			in := rt.Inspector()
			waitFinal(t, in, ids...)
			m := metrics.New(metrics.Options{Inspector: in})
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(m)
			want := `
# HELP argo_dead_tasks Dead tasks in argo_task not requeued (the dead letters an operator should requeue or discard), per tenant ("": none), read at scrape time.
# TYPE argo_dead_tasks gauge
argo_dead_tasks{tenant=""} 1
argo_dead_tasks{tenant="eu"} 2
argo_dead_tasks{tenant="us"} 1
`
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "argo_dead_tasks"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
