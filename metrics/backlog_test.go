package metrics_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/metrics"
	"github.com/argo-retry/argo/runtime"
)

// TestBacklogGauges: with Options.Backlog, an HTTP scrape of the registry
// (by testutil, then by a real Prometheus server) shows the tasks due per task name, tenant and
// flow group, the top BacklogTop of each and "(other)" for the rest, the
// age of the oldest due task and the held retries; scrapes within
// BacklogInterval read the database once.
func TestBacklogGauges(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			cfg := testConfig(b.DSN)
			cfg.RetryHold = 10 * time.Minute
			rt, err := runtime.Start(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Stop(ctx)
			ok := func(context.Context, []byte) error { return nil }
			// charge and refund share the flow group payments, mail is a
			// group of its own; the breakers are opened by hand so that
			// their tasks stay due.
			charge := &runtime.TaskDef{Name: "charge", Policy: fast(3), Flow: &runtime.FlowControl{Group: "payments", Limit: 2}, Run: ok}
			refund := &runtime.TaskDef{Name: "refund", Policy: fast(3), Flow: &runtime.FlowControl{Group: "payments", Limit: 2}, Run: ok}
			mail := &runtime.TaskDef{Name: "mail", Policy: fast(3), Flow: &runtime.FlowControl{Group: "mail", Limit: 1}, Run: ok}
			// flaky's failed attempt is held: its retry is due in a minute.
			attempted := make(chan struct{}, 1)
			flaky := &runtime.TaskDef{Name: "flaky",
				Policy: runtime.RetryPolicy{MaxAttempts: 3, Backoff: runtime.BackoffFixed, Initial: time.Minute, Jitter: runtime.Jitter{Kind: runtime.JitterNone}},
				Run: func(context.Context, []byte) error {
					select {
					case attempted <- struct{}{}:
					default:
					}
					return errors.New("try later")
				}}
			for _, d := range []*runtime.TaskDef{charge, refund, mail, flaky} {
				if err := rt.Register(d); err != nil {
					t.Fatal(err)
				}
			}
			in := rt.Inspector()
			// A flow group's row appears at its first claim: one task each first.
			var warm []int64
			for _, d := range []*runtime.TaskDef{charge, mail} {
				id, err := rt.Submit(ctx, runtime.Call{Task: d, Args: []byte(`{}`)})
				if err != nil {
					t.Fatal(err)
				}
				warm = append(warm, id)
			}
			waitFinal(t, in, warm...)
			for _, g := range []string{"payments", "mail"} {
				if err := in.OpenBreaker(ctx, g, "backlog test"); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			for _, c := range []struct {
				def    *runtime.TaskDef
				tenant string
			}{{charge, "eu"}, {charge, "eu"}, {refund, "eu"}, {charge, "us"}, {mail, ""}, {mail, "ap"}, {flaky, "eu"}} {
				if _, err := rt.Submit(runtime.WithTenant(ctx, c.tenant), runtime.Call{Task: c.def, Args: []byte(`{}`)}); err != nil {
					t.Fatal(err)
				}
			}
			<-attempted
			waitHeld(t, in, 1)

			m := metrics.New(metrics.Options{Inspector: in, Backlog: true, BacklogTop: 2, BacklogInterval: time.Hour})
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(m)
			srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
			defer srv.Close()
			// Tenants by tasks due: eu 3 (flaky's held retry is not due
			// yet), us 1, "" 1, ap 1: eu and "" listed (ties by name), us
			// and ap in (other). Names: charge 3, mail 2; refund 1 in (other),
			// flaky listed nowhere but (other) for its held retry.
			want := `
# HELP argo_backlog_due_tasks Tasks a worker could start now (pending, retrying or exhausted, due), per task name. Read at scrape time, at most once per Options.BacklogInterval; the names beyond the top Options.BacklogTop are summed in the series (other).
# TYPE argo_backlog_due_tasks gauge
argo_backlog_due_tasks{task="(other)"} 1
argo_backlog_due_tasks{task="charge"} 3
argo_backlog_due_tasks{task="mail"} 2
# HELP argo_backlog_tenant_due_tasks Tasks a worker could start now (pending, retrying or exhausted, due), per tenant ("": none). Read at scrape time, at most once per Options.BacklogInterval; the names beyond the top Options.BacklogTop are summed in the series (other).
# TYPE argo_backlog_tenant_due_tasks gauge
argo_backlog_tenant_due_tasks{tenant=""} 1
argo_backlog_tenant_due_tasks{tenant="(other)"} 2
argo_backlog_tenant_due_tasks{tenant="eu"} 3
# HELP argo_backlog_group_due_tasks Tasks a worker could start now (pending, retrying or exhausted, due), per flow group. Read at scrape time, at most once per Options.BacklogInterval; the names beyond the top Options.BacklogTop are summed in the series (other).
# TYPE argo_backlog_group_due_tasks gauge
argo_backlog_group_due_tasks{group="mail"} 2
argo_backlog_group_due_tasks{group="payments"} 4
# HELP argo_backlog_held_retries Retries held by an instance (started by it at their due time, without a claim), per task name. Read at scrape time, at most once per Options.BacklogInterval; the names beyond the top Options.BacklogTop are summed in the series (other).
# TYPE argo_backlog_held_retries gauge
argo_backlog_held_retries{task="(other)"} 1
argo_backlog_held_retries{task="charge"} 0
argo_backlog_held_retries{task="mail"} 0
# HELP argo_backlog_total_due_tasks Tasks a worker could start now, all names and tenants.
# TYPE argo_backlog_total_due_tasks gauge
argo_backlog_total_due_tasks 6
# HELP argo_backlog_total_held_retries Retries held by instances, all names and tenants.
# TYPE argo_backlog_total_held_retries gauge
argo_backlog_total_held_retries 1
# HELP argo_backlog_up 1 if the last backlog read succeeded, else 0 (the argo_backlog_* gauges are then left out).
# TYPE argo_backlog_up gauge
argo_backlog_up 1
`
			names := []string{"argo_backlog_due_tasks", "argo_backlog_tenant_due_tasks", "argo_backlog_group_due_tasks",
				"argo_backlog_held_retries", "argo_backlog_total_due_tasks", "argo_backlog_total_held_retries", "argo_backlog_up"}
			if err := testutil.ScrapeAndCompare(srv.URL, strings.NewReader(want), names...); err != nil {
				t.Fatal(err)
			}
			// The ages: every due task was submitted after start, so no
			// age exceeds the time since (give or take the millisecond due times are
			// stored in); the oldest of all is charge's.
			elapsed := time.Since(start).Seconds()
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			ages := gauges(families, "argo_backlog_oldest_due_seconds", "task")
			total := gauges(families, "argo_backlog_total_oldest_due_seconds", "")[""]
			if ages["charge"] <= 0 || ages["charge"] > elapsed+0.01 || total != ages["charge"] || ages["mail"] > ages["charge"] {
				t.Fatalf("oldest due ages %v, total %v; want charge's the oldest, in (0, %.3fs]", ages, total, elapsed)
			}
			if reads := gauges(families, "argo_backlog_reads_total", "")[""]; reads != 1 {
				t.Fatalf("argo_backlog_reads_total = %v after two scrapes within BacklogInterval; want 1 read", reads)
			}
			// A real Prometheus scrapes the same endpoint, and the KEDA
			// example's queries (docs/backlog.md) give the payments group's
			// figures.
			queries := docQueries(t)
			prom := prometheusServer(t, strings.TrimPrefix(srv.URL, "http://"))
			if got := promQuery(t, prom, queries[0]); got != 4 {
				t.Fatalf("%s = %v in Prometheus; want 4 (charge's 3 and refund's 1)", queries[0], got)
			}
			groupAges := gauges(families, "argo_backlog_group_oldest_due_seconds", "group")
			if got := promQuery(t, prom, queries[1]); got != groupAges["payments"] || got != ages["charge"] {
				t.Fatalf("%s = %v in Prometheus; want payments' oldest due age %v (charge's)", queries[1], got, groupAges["payments"])
			}
		})
	}
}

// TestBacklogOffByDefault: without Options.Backlog no argo_backlog_ series
// is exported and the backlog is not read.
func TestBacklogOffByDefault(t *testing.T) {
	b := testdb.Backends(t)[0]
	ctx := context.Background()
	rt, err := runtime.Start(ctx, testConfig(b.DSN))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(ctx)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.New(metrics.Options{Inspector: rt.Inspector()}))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "argo_backlog_") {
			t.Fatalf("%s exported without Options.Backlog", f.GetName())
		}
	}
}

// waitHeld waits until the backlog shows n held retries.
func waitHeld(t *testing.T, in *runtime.Inspector, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		bl, err := in.Backlog(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if bl.Total.Held == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("held retries %d; want %d", bl.Total.Held, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gauges returns the values of family name by the value of label (by ""
// for a family without labels).
func gauges(families []*dto.MetricFamily, name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			key := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					key = l.GetValue()
				}
			}
			switch {
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}
