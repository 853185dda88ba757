package runtime

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// A group's calls, and a call with Call.After, keep what the submitting
// call carries, as Submit's do: the tenant (Call.Tenant, else the
// context's) and the trace context.
func TestSubmitGroupKeepsTenantAndTrace(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		def := &TaskDef{Name: "group.caller", Policy: fastPolicy(1), Run: func(context.Context, []byte) error { return nil }}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		sc := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
			SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
			TraceFlags: trace.FlagsSampled,
		})
		ctx := trace.ContextWithSpanContext(WithTenant(context.Background(), "from-context"), sc)
		ids, err := rt.SubmitGroup(ctx, []GroupCall{
			{Call: Call{Task: def, Args: []byte(`{}`), Tenant: "explicit"}},
			{Call: Call{Task: def, Args: []byte(`{}`)}, AfterCalls: []int{0}},
		})
		if err != nil {
			t.Fatal(err)
		}
		after, err := rt.Submit(ctx, Call{Task: def, Args: []byte(`{}`), After: []int64{ids[0]}})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range []struct {
			id     int64
			tenant string
		}{{ids[0], "explicit"}, {ids[1], "from-context"}, {after, "from-context"}} {
			task, err := rt.Inspector().Get(context.Background(), c.id)
			if err != nil {
				t.Fatal(err)
			}
			if task.Tenant != c.tenant {
				t.Errorf("call %d: tenant %q, want %q", i, task.Tenant, c.tenant)
			}
			if !strings.Contains(task.TraceParent, sc.TraceID().String()) {
				t.Errorf("call %d: trace parent %q, want one of trace %s", i, task.TraceParent, sc.TraceID())
			}
		}
		if _, err := rt.SubmitGroup(WithTenant(context.Background(), "bad\xff"), []GroupCall{{Call: Call{Task: def, Args: []byte(`{}`)}}}); err == nil || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("a group call with a non-UTF-8 tenant: %v, want the tenant refused", err)
		}
	})
}
