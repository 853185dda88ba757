package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// spanAttrs maps a span's attributes by key.
func spanAttrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		out[kv.Key] = kv.Value
	}
	return out
}

// describeSpan is one exported span on one line (the closing note prints them).
func describeSpan(s tracetest.SpanStub) string {
	a := spanAttrs(s)
	var links []string
	for _, l := range s.Links {
		links = append(links, l.SpanContext.TraceID().String()+"/"+l.SpanContext.SpanID().String())
	}
	return fmt.Sprintf("%q trace=%s span=%s parent=%s links=%v task=%d name=%s attempt=%d tenant=%q instance=%s outcome=%s status=%s",
		s.Name, s.SpanContext.TraceID(), s.SpanContext.SpanID(), s.Parent.SpanID(), links,
		a[AttrTaskID].AsInt64(), a[AttrTaskName].AsString(), a[AttrAttempt].AsInt64(), a[AttrTenant].AsString(),
		a[AttrInstance].AsString(), a[AttrOutcome].AsString(), s.Status.Code)
}

// A task submitted inside a caller's span, for a tenant given by the
// context, fails its first attempt on instance A and succeeds on instance B
// after A stopped: both attempts are exported as spans linked to the
// caller's span, with the task's id, name, attempt, tenant and outcome; the
// async attempt on B runs with the caller's tenant in its context, and the
// stored trace context reads back as the caller's trace id.
func TestTraceOfRetryAcrossInstances(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		exporter := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
		defer tp.Shutdown(ctx)

		callerCtx, caller := tp.Tracer("checkout").Start(WithTenant(ctx, "acme-eu"), "checkout")
		policy := RetryPolicy{MaxAttempts: 3, Backoff: BackoffFixed, Initial: 200 * time.Millisecond, Jitter: Jitter{Kind: JitterNone}}

		cfgA := testConfigT(t, dsn)
		cfgA.InstanceID, cfgA.TracerProvider = "instance-a", tp
		rtA := startRuntime(t, cfgA)
		defA := &TaskDef{Name: "charge", Policy: policy, Run: func(context.Context, []byte) error { return errors.New("card processor down") }}
		if err := rtA.Register(defA); err != nil {
			t.Fatal(err)
		}
		id, err := rtA.Submit(callerCtx, Call{Task: defA, Args: []byte(`{}`)})
		caller.End()
		if err != nil {
			t.Fatal(err)
		}
		stored := waitState(t, rtA, id, StateRetrying, 20*time.Second)
		if stored.Tenant != "acme-eu" || TraceID(stored) != caller.SpanContext().TraceID().String() {
			t.Fatalf("stored tenant %q, trace id %q; want acme-eu, %s", stored.Tenant, TraceID(stored), caller.SpanContext().TraceID())
		}
		if err := rtA.Stop(ctx); err != nil {
			t.Fatal(err)
		}

		var mu sync.Mutex
		var seenTenant string
		var seenSpan trace.SpanContext
		cfgB := testConfigT(t, dsn)
		cfgB.InstanceID, cfgB.TracerProvider = "instance-b", tp
		rtB := startRuntime(t, cfgB)
		defB := &TaskDef{Name: "charge", Policy: policy, Run: func(ctx context.Context, _ []byte) error {
			mu.Lock()
			defer mu.Unlock()
			seenTenant, seenSpan = TenantFrom(ctx), trace.SpanContextFromContext(ctx)
			return nil
		}}
		if err := rtB.Register(defB); err != nil {
			t.Fatal(err)
		}
		waitState(t, rtB, id, StateSucceeded, 30*time.Second)
		if err := rtB.Stop(ctx); err != nil {
			t.Fatal(err)
		}

		mu.Lock()
		if seenTenant != "acme-eu" || !seenSpan.IsValid() {
			t.Fatalf("the async attempt on B ran with tenant %q, span valid %v; want acme-eu and its attempt span", seenTenant, seenSpan.IsValid())
		}
		mu.Unlock()

		var attempts []tracetest.SpanStub
		for _, s := range exporter.GetSpans() {
			t.Log(describeSpan(s))
			if strings.HasPrefix(s.Name, "argo.attempt ") {
				attempts = append(attempts, s)
			}
		}
		if len(attempts) != 2 {
			t.Fatalf("%d attempt spans exported; want 2", len(attempts))
		}
		want := []struct {
			instance, outcome string
		}{{"instance-a", OutcomeFailed}, {"instance-b", OutcomeSucceeded}}
		for i, s := range attempts {
			a := spanAttrs(s)
			if len(s.Links) != 1 || s.Links[0].SpanContext.TraceID() != caller.SpanContext().TraceID() || s.Links[0].SpanContext.SpanID() != caller.SpanContext().SpanID() {
				t.Fatalf("attempt span %d links %v; want one link to the caller's span %s/%s", i+1, s.Links, caller.SpanContext().TraceID(), caller.SpanContext().SpanID())
			}
			if a[AttrTaskID].AsInt64() != id || a[AttrTaskName].AsString() != "charge" || a[AttrAttempt].AsInt64() != int64(i+1) ||
				a[AttrTenant].AsString() != "acme-eu" || a[AttrInstance].AsString() != want[i].instance || a[AttrOutcome].AsString() != want[i].outcome {
				t.Fatalf("attempt span %d: %s; want task %d, charge, attempt %d, tenant acme-eu, %s, %s", i+1, describeSpan(s), id, i+1, want[i].instance, want[i].outcome)
			}
		}
		if seenSpan.SpanID() != attempts[1].SpanContext.SpanID() {
			t.Fatalf("the attempt on B ran in span %s; want its attempt span %s", seenSpan.SpanID(), attempts[1].SpanContext.SpanID())
		}
	})
}

// A sync call's attempt span is a child of the caller's span (and linked
// to it); Call.Tenant wins over the context's tenant; a fallback and an
// alert action run in spans of their own, linked to the caller.
func TestTraceOfSyncCallFallbackAndAlert(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		exporter := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
		defer tp.Shutdown(ctx)
		cfg := testConfigT(t, dsn)
		cfg.TracerProvider = tp
		rt := startRuntime(t, cfg)
		alerted := make(chan string, 1)
		fellBack := make(chan string, 1)
		def := &TaskDef{Name: "notify", Policy: fastPolicy(1), Thread: Sync, Alert: "true",
			AlertAction: func(ctx context.Context, _ AlertEvent) error { alerted <- TenantFrom(ctx); return nil },
			Run:         func(context.Context, []byte) error { return Permanent(errors.New("HTTP 400")) },
			Fallback: func(ctx context.Context, _ []byte, _ error) error {
				fellBack <- TenantFrom(ctx)
				return nil
			}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		callerCtx, caller := tp.Tracer("test").Start(WithTenant(ctx, "from-context"), "send")
		id, _ := rt.Submit(callerCtx, Call{Task: def, Args: []byte(`{}`), Tenant: "explicit"})
		caller.End()
		if got := receive(t, fellBack, 20*time.Second, "the fallback"); got != "explicit" {
			t.Fatalf("fallback ran with tenant %q; want explicit (Call.Tenant)", got)
		}
		if got := receive(t, alerted, 20*time.Second, "the alert action"); got != "explicit" {
			t.Fatalf("alert action ran with tenant %q; want explicit", got)
		}
		waitState(t, rt, id, StateRecovered, 20*time.Second)
		if err := rt.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		kinds := map[string]tracetest.SpanStub{}
		for _, s := range exporter.GetSpans() {
			t.Log(describeSpan(s))
			if k := spanAttrs(s)[AttrKind].AsString(); k != "" {
				kinds[k] = s
			}
		}
		for _, k := range []string{"attempt", "fallback", "alert"} {
			s, ok := kinds[k]
			if !ok {
				t.Fatalf("no %s span exported", k)
			}
			if len(s.Links) != 1 || s.Links[0].SpanContext.SpanID() != caller.SpanContext().SpanID() {
				t.Fatalf("%s span links %v; want the caller's span %s", k, s.Links, caller.SpanContext().SpanID())
			}
			if a := spanAttrs(s); a[AttrTenant].AsString() != "explicit" || a[AttrTaskID].AsInt64() != id {
				t.Fatalf("%s span: %s; want tenant explicit, task %d", k, describeSpan(s), id)
			}
		}
		if s := kinds["attempt"]; s.Parent.SpanID() != caller.SpanContext().SpanID() || spanAttrs(s)[AttrOutcome].AsString() != OutcomePermanent {
			t.Fatalf("sync attempt span: %s; want the caller's child, outcome %s", describeSpan(s), OutcomePermanent)
		}
		if o := spanAttrs(kinds["fallback"])[AttrOutcome].AsString(); o != OutcomeSucceeded {
			t.Fatalf("fallback span outcome %q; want %s", o, OutcomeSucceeded)
		}
	})
}

// A tenant longer than MaxTenantBytes, or not UTF-8, is refused before
// anything is written.
func TestTenantRefused(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfigT(t, dsn))
		def := &TaskDef{Name: "t", Policy: fastPolicy(1), Run: func(context.Context, []byte) error { return nil }}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{strings.Repeat("x", MaxTenantBytes+1), "\xff"} {
			_, err := rt.Submit(WithTenant(context.Background(), bad), Call{Task: def, Args: []byte(`{}`)})
			if !errors.Is(err, ErrNotPersisted) || !strings.Contains(err.Error(), "tenant") {
				t.Fatalf("tenant %.20q: %v; want ErrNotPersisted naming the tenant", bad, err)
			}
		}
		if n, err := rt.Inspector().Count(context.Background(), Filter{}); err != nil || n != 0 {
			t.Fatalf("%d tasks written, %v; want none", n, err)
		}
	})
}
