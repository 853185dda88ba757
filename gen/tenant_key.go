package gen

import "github.com/dave/jennifer/jen"

// The tenant-by=param key: fmt.Sprint of the parameter is the call's
// tenant, stored with its task (runtime.WithTenant around the submit's
// context, which Call.Tenant left empty takes).
func init() {
	keys = append(keys, "tenant-by")
	setters["tenant-by"] = identSetter(func(s *spec) *string { return &s.tenantBy }, "the name of a parameter")
}

// withTenant wraps the submit's context ctx in runtime.WithTenant when t
// has a tenant-by parameter.
func (e *emitter) withTenant(t *task, ctx *jen.Statement) *jen.Statement {
	if t.tenantBy == nil {
		return ctx
	}
	return e.rt("WithTenant").Call(ctx, jen.Id(e.p.internal.key).Call(jen.Id(t.tenantBy.wrap)))
}
