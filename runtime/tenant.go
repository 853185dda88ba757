package runtime

import (
	"context"
	"fmt"
	"unicode/utf8"
)

// MaxTenantBytes is the longest tenant a task can carry (the column
// argo_task.tenant, migration 000009, holds 128 bytes).
const MaxTenantBytes = 128

type tenantKey struct{}

// WithTenant returns ctx carrying tenant: a call submitted with it, whose
// Call.Tenant is empty, is stored for that tenant, and every attempt,
// fallback and alert of the task runs with it again (TenantFrom), sync or
// async, on any instance.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// TenantFrom returns the tenant ctx carries ("" for none): inside an
// attempt, the task's tenant.
func TenantFrom(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}

// checkTenant refuses a tenant the column cannot hold as given.
func checkTenant(tenant string) error {
	if len(tenant) > MaxTenantBytes {
		return fmt.Errorf("tenant %.32q… is %d bytes; at most %d (MaxTenantBytes): use a shorter tenant id", tenant, len(tenant), MaxTenantBytes)
	}
	if !utf8.ValidString(tenant) {
		return fmt.Errorf("tenant %q is not valid UTF-8: use a text tenant id", tenant)
	}
	return nil
}

// stampCaller stores on t what the submitting call carries: its tenant
// (Call.Tenant, else the context's) and its trace context (the W3C
// traceparent of the span in ctx, if any).
func stampCaller(ctx context.Context, c Call, t *Task) error {
	t.Tenant = c.Tenant
	if t.Tenant == "" {
		t.Tenant = TenantFrom(ctx)
	}
	if err := checkTenant(t.Tenant); err != nil {
		return err
	}
	t.TraceParent = traceParentOf(ctx)
	return nil
}

// withTaskCaller gives an attempt's context the tenant of its task, as the
// submitting call had it.
func withTaskCaller(ctx context.Context, t *Task) context.Context {
	if t.Tenant == "" || TenantFrom(ctx) == t.Tenant {
		return ctx
	}
	return WithTenant(ctx, t.Tenant)
}
