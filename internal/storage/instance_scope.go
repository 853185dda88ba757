package storage

import (
	"database/sql"
	"strings"
)

// An instance can be limited to some tenants (runtime Config.Tenants): its
// claims carry "AND tenant IN (…)" (ClaimGroup.Tenants, FlowClaim.Tenants),
// and its row in argo_instance says so (column tenants, migration 000012),
// so that the shard split counts it only among instances with the same
// tenants.

// withTenants adds to a claim's condition cond (with its arguments args)
// the limit to tenants; nil tenants leave it as it is.
func withTenants(cond string, args []any, tenants []string) (string, []any) {
	if tenants == nil {
		return cond, args
	}
	in, targs := InList(tenants)
	return cond + " AND tenant IN " + in, append(args, targs...)
}

// EncodeTenantScope is the stored form of an instance's tenants (column
// argo_instance.tenants): nil is NULL (every tenant), else one per line.
func EncodeTenantScope(tenants []string) any {
	if tenants == nil {
		return nil
	}
	return strings.Join(tenants, "\n")
}

// DecodeTenantScope reads the column argo_instance.tenants.
func DecodeTenantScope(v sql.NullString) []string {
	if !v.Valid {
		return nil
	}
	return strings.Split(v.String, "\n")
}
